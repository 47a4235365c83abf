"""Comparing models: DeLong's test (``delong``), McNemar's test (``mcnemar``), one-proportion
intervals (``proportions``), the SPRT (``sprt``), paired tests on per-unit values (``units``),
multiplicity adjustment and power."""
