"""A tiny, obviously-correct scalar Pair-HMM forward pass: the test suite's second opinion.

Works on one pair straight from text-level inputs (base letters, Phred qualities), float64,
with its own probability arithmetic (it does NOT use ``PairSet.probs``), written as the textbook
double loop over GATK4's LoglessPairHMM recurrences.

M->M is GATK4's ``1 - min(1, M->I + M->D)``: clamped at 0, which only differs from the plain
``1 - (M->I + M->D)`` when insertion and deletion qualities are so low that their error
probabilities add up to more than 1; no real data set here comes close.
"""
from __future__ import annotations

import math

INITIAL_CONDITION = 2.0 ** 1020
LOG10_INITIAL_CONDITION = math.log10(INITIAL_CONDITION)


def error_prob(q: int) -> float:
    return 10.0 ** (-q / 10.0)


def _matches(read_base: str, hap_base: str) -> bool:
    r, h = read_base.upper(), hap_base.upper()
    return r == h or r == "N" or h == "N"


def scalar_log10(read: str, hap: str, base_q, ins_q, del_q, gcp_q) -> float:
    """log10 P(read | hap) for one pair; qualities are sequences of Phred integers."""
    m, n = len(read), len(hap)
    M = [[0.0] * (n + 1) for _ in range(m + 1)]
    I = [[0.0] * (n + 1) for _ in range(m + 1)]
    D = [[0.0] * (n + 1) for _ in range(m + 1)]
    # GATK fills the whole first deletion row, the padding column j = 0 included.
    for j in range(n + 1):
        D[0][j] = INITIAL_CONDITION / n
    for i in range(1, m + 1):
        e = error_prob(base_q[i - 1])
        to_ins, to_del, gap = error_prob(ins_q[i - 1]), error_prob(del_q[i - 1]), error_prob(gcp_q[i - 1])
        match_to_match = 1.0 - min(1.0, to_ins + to_del)
        gap_to_match = 1.0 - gap
        for j in range(1, n + 1):
            emission = (1.0 - e) if _matches(read[i - 1], hap[j - 1]) else e / 3.0
            M[i][j] = emission * (match_to_match * M[i - 1][j - 1]
                                  + gap_to_match * (I[i - 1][j - 1] + D[i - 1][j - 1]))
            I[i][j] = to_ins * M[i - 1][j] + gap * I[i - 1][j]
            D[i][j] = to_del * M[i][j - 1] + gap * D[i][j - 1]
    total = sum(M[m][j] + I[m][j] for j in range(1, n + 1))
    if total > 0:
        return math.log10(total) - LOG10_INITIAL_CONDITION
    # Only reachable with ins + del error > 1 (M->M negative), as np.log10 would answer.
    return -math.inf if total == 0 else math.nan
