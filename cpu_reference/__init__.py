"""NumPy CPU references, one package per workload (:mod:`.pairhmm`, :mod:`.profile`): the float64
truth every backend is cross-checked against, each proven against the reference tool's own values.

This package depends on NumPy alone and imports nothing of ``hmmbench``: it takes the data as
arrays (objects with the fields its protocols name) and defines the algorithms' constants, which
``hmmbench`` imports from here. The backends that wrap it live in ``hmmbench``."""
