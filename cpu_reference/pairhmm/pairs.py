"""What the reference reads of a set of pairs: flat NumPy arrays, no class of ours.

``hmmbench.pairhmm.model.PairSet`` has these fields; any object that has them (a test's own, a
user's) runs through :func:`~cpu_reference.pairhmm.forward` the same way. Reads ``r`` occupy
``read_bases[read_offsets[r]:read_offsets[r+1]]`` (haplotypes likewise with ``hap_offsets``); pair
``p`` aligns read ``pair_read[p]`` to haplotype ``pair_hap[p]``.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np


class Probabilities(Protocol):
    """Per read position, float64: the emission of a (mis)matching base and GATK's six
    transitions (M->M, I->M = D->M, M->I, I->I, M->D, D->D)."""
    match: np.ndarray
    mismatch: np.ndarray
    mm: np.ndarray
    gm: np.ndarray
    mi: np.ndarray
    ii: np.ndarray
    md: np.ndarray
    dd: np.ndarray


class Pairs(Protocol):
    read_bases: np.ndarray          # base codes 0..4 (A C G T N), all reads end to end
    read_offsets: np.ndarray        # (reads + 1,)
    hap_bases: np.ndarray
    hap_offsets: np.ndarray         # (haplotypes + 1,)
    pair_read: np.ndarray           # (pairs,) read of each pair
    pair_hap: np.ndarray            # (pairs,) haplotype of each pair

    @property
    def n_pairs(self) -> int: ...

    @property
    def read_lengths(self) -> np.ndarray: ...

    @property
    def hap_lengths(self) -> np.ndarray: ...

    @property
    def pair_read_lengths(self) -> np.ndarray: ...

    @property
    def pair_hap_lengths(self) -> np.ndarray: ...

    @property
    def probs(self) -> Probabilities: ...

    def subset_pairs(self, pairs: np.ndarray) -> "Pairs":
        """The given pairs (indices) as a set of their own, in that order."""
