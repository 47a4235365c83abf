"""Shared kernels over sorted and segmented arrays: rank statistics (Mann-Whitney counts, tie
groups, cumulative class weights) and segment (per-query, per-group) sums. No public names."""
