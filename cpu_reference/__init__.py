"""NumPy CPU references, one package per workload (:mod:`.pairhmm`, :mod:`.profile`): the float64
truth every backend is cross-checked against, each proven against the reference tool's own values."""
