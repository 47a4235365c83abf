"""Comparing models: DeLong, McNemar, proportion intervals, the SPRT (``comparison``), paired tests
on per-unit values (``units``), multiplicity adjustment and power."""
