"""The compiled kernels; everything else about the package is in pyproject.toml.

``calipers._kernels._native`` is C with no dependency but Python's headers. It is
optional: where no C compiler is found the package installs without it and runs
the same kernels as NumPy passes (``calipers._kernels.native``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "calipers._kernels._native",
    sources=["src/calipers/_kernels/_native.c"],
    extra_compile_args=["-O3", "-std=gnu11", "-ffp-contract=off"],
    optional=True,
)])
