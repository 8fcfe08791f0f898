"""Text forms of reads and haplotypes, shared by the block and GATK writers."""
from __future__ import annotations

import numpy as np

from ..model import BASES, PairSet

_LETTER = np.frombuffer(BASES, dtype=np.uint8)


def hap_text(pairs: PairSet, h: int) -> str:
    return _LETTER[pairs.hap(int(h))].tobytes().decode()


def read_line(pairs: PairSet, r: int) -> str:
    """'bases base-quals ins-quals del-quals gcp-quals' (Phred+33)."""
    a, b = int(pairs.read_offsets[r]), int(pairs.read_offsets[r + 1])
    fields = [_LETTER[pairs.read_bases[a:b]]] + [
        q[a:b] + np.uint8(33) for q in (pairs.base_qual, pairs.ins_qual, pairs.del_qual,
                                        pairs.gcp_qual)]
    return " ".join(f.tobytes().decode() for f in fields)
