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
