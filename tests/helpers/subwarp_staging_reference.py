"""The general sub-warp staging by array name, kept as the tests' reference: the production
staging (``hmmbench.pairhmm.subwarp.staging``: ``whole_offsets``/``stage_whole`` for a small call,
``chunk_offsets``/``stage_chunk_part`` per chunk) must write the same bytes at the same offsets."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from hmmbench.pairhmm.model import PairSet
from hmmbench.pairhmm.subwarp.staging import STAGED

#: Staging tasks of a chunk (worker threads): the big byte arrays alone, the rest together.
STAGE_TASKS = (("read_bases",), ("base_qual",), ("ins_qual",), ("del_qual",), ("gcp_qual",),
               ("hap_bases",), ("read_off", "hap_off", "batch_reads", "batch_haps",
                                "batch_pairs", "meta"))

_ITEMSIZE = {dtype: np.dtype(dtype).itemsize for _, dtype in STAGED}
_STAGED_SIZES = tuple((name, dtype, _ITEMSIZE[dtype]) for name, dtype in STAGED)


def chunk_sources(pairs: PairSet, b0: int, b1: int, meta: np.ndarray) -> dict:
    """{name: (source array, value subtracted or None)} of batches b0:b1 (views, no copies)."""
    r0, r1 = int(pairs.batch_reads[b0]), int(pairs.batch_reads[b1])
    h0, h1 = int(pairs.batch_haps[b0]), int(pairs.batch_haps[b1])
    a0, a1 = int(pairs.read_offsets[r0]), int(pairs.read_offsets[r1])
    c0, c1 = int(pairs.hap_offsets[h0]), int(pairs.hap_offsets[h1])
    src = {name: (getattr(pairs, name)[a0:a1], None)
           for name in ("read_bases", "base_qual", "ins_qual", "del_qual", "gcp_qual")}
    src.update(read_off=(pairs.read_offsets[r0:r1 + 1], a0),
               hap_bases=(pairs.hap_bases[c0:c1], None),
               hap_off=(pairs.hap_offsets[h0:h1 + 1], c0),
               batch_reads=(pairs.batch_reads[b0:b1 + 1], r0),
               batch_haps=(pairs.batch_haps[b0:b1 + 1], h0),
               batch_pairs=(pairs.batch_pairs[b0:b1 + 1], None), meta=(meta, None))
    return src


def staging_offsets(pairs: PairSet, bounds, n_meta: int) -> tuple[dict, int]:
    """{name: (byte offset, dtype)} fitting every chunk, and the slot size (from offsets only).
    Plain integers per chunk: a per-region call has one chunk, where numpy's per-call overhead
    would be most of the work."""
    br, bh, ro, ho = pairs.batch_reads, pairs.batch_haps, pairs.read_offsets, pairs.hap_offsets
    pos = reads = hap_bases = haps = batches = 0
    for b0, b1 in bounds:
        r0, r1, h0, h1 = int(br[b0]), int(br[b1]), int(bh[b0]), int(bh[b1])
        pos = max(pos, int(ro[r1]) - int(ro[r0]))
        hap_bases = max(hap_bases, int(ho[h1]) - int(ho[h0]))
        reads, haps, batches = max(reads, r1 - r0), max(haps, h1 - h0), max(batches, b1 - b0)
    count = {"read_off": reads + 1, "hap_bases": hap_bases, "hap_off": haps + 1, "meta": n_meta,
             "batch_reads": batches + 1, "batch_haps": batches + 1, "batch_pairs": batches + 1}
    offs, at = {}, 0
    for name, dtype, size in _STAGED_SIZES:
        offs[name] = (at, dtype)
        at += -(-max(count.get(name, pos) * size, 1) // 256) * 256
    return offs, at


def stage(sources: dict, names: Sequence[str], offs: dict, buf: np.ndarray) -> int:
    """Copy arrays ``names`` of a chunk into its staging buffer; returns the end of the last."""
    used = 0
    for name in names:
        a, base = sources[name]
        o, dtype = offs[name]
        nbytes = a.size * _ITEMSIZE[dtype]
        if base is None and dtype is np.uint8 and a.dtype == np.uint8:
            buf[o:o + nbytes] = a  # bytes as they are (~0.7 us less than a view and copyto)
            used = max(used, o + nbytes)
            continue
        dst = buf[o:o + nbytes].view(dtype)
        if base is None:
            np.copyto(dst, a, casting="same_kind")
        else:
            np.subtract(a, base, out=dst, casting="same_kind")
        used = max(used, o + nbytes)
    return used
