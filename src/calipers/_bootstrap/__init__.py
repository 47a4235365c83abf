"""The one resampler: designs and counts (``resample``), metric kernels evaluated under counts
(``kernels``), the compiled / threaded engine (``engine``), intervals (``intervals``) and the public
paired bootstrap (``paired``)."""
