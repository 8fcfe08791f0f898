"""Random pair sets with awkward shapes, shared by the kernel tests."""
from __future__ import annotations

import numpy as np

from hmmbench.pairhmm.model import Batch, PairSet, Read, pack


def ragged_pairs(seed: int = 3, batches: int = 9, *, empty_batch: int = 4, max_read: int = 140,
                 max_hap: int = 200, base_q=(2, 41), ins_q=(30, 46), del_q=(30, 46),
                 gcp_q=(5, 15)) -> PairSet:
    """Batches of assorted sizes and lengths (1 up to the maxima), N bases included; batch
    ``empty_batch`` has haplotypes but no reads. Qualities are drawn from [lo, hi) per position."""
    rng = np.random.default_rng(seed)

    def seq(n):
        return rng.choice(list(b"ACGTN"), n, p=[.24, .24, .24, .24, .04]).astype(np.uint8).tobytes()

    def qual(n, lo_hi):
        return (rng.integers(*lo_hi, n) + 33).astype(np.uint8).tobytes()

    out = []
    for b in range(batches):
        nr, nh = (0, 2) if b == empty_batch else (int(rng.integers(1, 5)), int(rng.integers(1, 4)))
        reads = []
        for _ in range(nr):
            m = int(rng.integers(1, max_read))
            reads.append(Read(seq(m), qual(m, base_q), qual(m, ins_q), qual(m, del_q),
                              qual(m, gcp_q)))
        haps = [seq(int(rng.integers(1, max_hap))) for _ in range(nh)]
        out.append(Batch(reads, haps))
    return pack(out)


def deep_pairs(seed: int = 1, n: int = 48, length=(150, 400), mismatch=(0.0, 0.9),
               base_q=(10, 45), gcp_q=(10, 41), ins_q=(25, 60)) -> PairSet:
    """One read x one haplotype per batch, the read a copy of its haplotype with a random
    fraction of substituted bases: likelihoods from ~1 down past 1e-300 (the float64 reference
    stays finite to ~1e-600), for the float32 underflow tests. Qualities are drawn per pair
    from the given [lo, hi) ranges (constant along the read)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m = int(rng.integers(*length))
        hap = rng.integers(0, 4, m)
        read = hap.copy()
        bad = rng.random(m) < rng.uniform(*mismatch)
        read[bad] = (read[bad] + rng.integers(1, 4, int(bad.sum()))) % 4

        def q(lo_hi):
            return bytes([int(rng.integers(*lo_hi)) + 33]) * m

        out.append(Batch([Read(bytes(b"ACGT"[c] for c in read), q(base_q), q(ins_q), q(ins_q),
                               q(gcp_q))], [bytes(b"ACGT"[c] for c in hap)]))
    return pack(out)
