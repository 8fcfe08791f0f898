"""An hmmbench Pair-HMM backend in a package of its own.

``backends()`` is the entry point hmmbench loads (see ``pyproject.toml``). It returns two backends
that compute the same thing in the same way -- one thread (or one NumPy lane) per pair, row by
row, in float32:

- ``example-cuda``: the kernel ``forward.cu`` through PyCUDA (``cuda.py``); where CUDA is
  missing, ``hmmbench list`` and ``hmmbench run`` say why and skip it.
- ``example-numpy``: the same recurrence on the CPU with every pair a NumPy lane (``lanes.py``),
  so the package can be tried, and tested, on a machine without a GPU.
"""
from .backend import ExampleCuda, ExampleNumpy


def backends() -> list:
    return [ExampleNumpy(), ExampleCuda()]
