"""The GATK4-exact vectorized NumPy CPU reference of the Pair-HMM (float64) and its float32 variant.

It depends on NumPy alone: a pair set is any object with the arrays of :class:`.pairs.Pairs`
(``hmmbench.pairhmm.model.PairSet`` is one); GATK's constants are :mod:`.constants`. The
``numpy`` / ``numpy-f32`` backends that wrap it are ``hmmbench.pairhmm.reference``.
"""
from .forward import finish_float32, forward, forward_log10, forward_sums_f32

__all__ = ["forward", "forward_log10", "forward_sums_f32", "finish_float32"]
