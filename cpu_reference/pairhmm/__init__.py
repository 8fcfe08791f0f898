"""The GATK4-exact vectorized NumPy CPU reference of the Pair-HMM (float64) and its float32 variant."""
from .forward import finish_float32, forward, forward_log10, forward_sums_f32

__all__ = ["forward", "forward_log10", "forward_sums_f32", "finish_float32"]
