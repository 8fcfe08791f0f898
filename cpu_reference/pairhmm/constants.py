"""GATK's numeric constants of the Pair-HMM forward algorithm, shared by the reference and every
backend."""
import numpy as np

#: Initial-condition constants (D[0][j] = C / n for every j >= 0, as GATK sets it, so M[1][1] sees
#: gm * C / n): GATK Java (float64) and GKL (float32).
LOG10_C64 = 1020 * np.log10(2.0)
LOG10_C32 = 120 * np.log10(2.0)
C64 = 2.0 ** 1020
C32 = 2.0 ** 120
#: A float32 forward sum below this is recomputed in float64 (GKL's rule).
F32_MIN_ACCEPTED = 1e-28
