"""The Pair-HMM data model: batches of reads x haplotypes, packed once into flat NumPy arrays.

Every backend starts from a :class:`PairSet`; its own layout step (sorting, interleaving,
padding, device upload) is timed separately as ``prep``.

Semantics are GATK4's (see ``../shared/data/pairhmm/README.md``): row ``i`` of the DP matrix uses
the emission and transition probabilities of read position ``i-1``; every read of a batch is aligned
to every haplotype of that batch; pairs are ordered batch by batch, read-major.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Optional, Sequence

import numpy as np

# GATK's and GKL's initial-condition constants and the float32 fallback threshold belong to the
# algorithm: the NumPy reference defines them, the model hands them on to the backends.
from cpu_reference.pairhmm.constants import C32, C64, F32_MIN_ACCEPTED, LOG10_C32, LOG10_C64  # noqa: F401

#: Base codes: A C G T N. N (code 4) matches anything.
BASES = b"ACGTN"
N_CODE = 4
_BASE_CODE = np.full(256, 255, dtype=np.uint8)
for _i, _b in enumerate(BASES):
    _BASE_CODE[_b] = _i
    _BASE_CODE[ord(chr(_b).lower())] = _i

#: Highest Phred quality the model admits (Phred+33 '~' is 93).
MAX_PHRED = 93

#: Past float64's range: a likelihood whose scaled float64 sum (C64 x likelihood) is below the
#: smallest normal double, 2^-1022, i.e. log10 below about -614.7. There GATK's float64 sum is
#: subnormal (few significant bits) or 0, and GATK answers log10(0) = -inf; hmmbench keeps that
#: answer (the reference and every backend return -inf or a value below this floor, and any two
#: such values agree). See README "What hmmbench promises".
LOG10_RANGE_FLOOR = -(1022 + 1020) * float(np.log10(2.0))


def encode_bases(seq: bytes) -> np.ndarray:
    """Bytes -> codes 0..4; 255 marks an invalid character (the loaders report it)."""
    return _BASE_CODE[np.frombuffer(seq, dtype=np.uint8)]


#: 10^(-q/10) for every byte value: a table lookup is ~10x faster than the power function and
#: gives the same bits on every platform.
PHRED_ERROR = 10.0 ** (-np.arange(256, dtype=np.float64) / 10.0)


def phred_to_error(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q)
    if q.dtype == np.uint8:
        return PHRED_ERROR[q]
    return 10.0 ** (-q.astype(np.float64) / 10.0)


@dataclass(frozen=True)
class Probabilities:
    """Per read position, float64, same indexing as ``PairSet.read_bases``.

    match/mismatch are the emission of a (mis)matching base; the six transitions are
    GATK's M->M, I->M (= D->M), M->I, I->I, M->D, D->D (= I->I).
    """
    match: np.ndarray
    mismatch: np.ndarray
    mm: np.ndarray
    gm: np.ndarray
    mi: np.ndarray
    ii: np.ndarray
    md: np.ndarray
    dd: np.ndarray

    @classmethod
    def from_qualities(cls, base_q, ins_q, del_q, gcp_q) -> "Probabilities":
        e = phred_to_error(base_q)
        mi = phred_to_error(ins_q)
        md = phred_to_error(del_q)
        gap = phred_to_error(gcp_q)
        # GATK4 clamps M->M at 0 (it only bites when ins + del error > 1, i.e. qualities <= ~3).
        mm = 1.0 - np.minimum(1.0, mi + md)
        return cls(match=1.0 - e, mismatch=e / 3.0, mm=mm, gm=1.0 - gap,
                   mi=mi, ii=gap, md=md, dd=gap)

    def stacked(self, dtype=np.float64) -> np.ndarray:
        """(n_positions, 8) array in field order: match, mismatch, mm, gm, mi, ii, md, dd."""
        return np.stack([self.match, self.mismatch, self.mm, self.gm, self.mi, self.ii,
                         self.md, self.dd], axis=1).astype(dtype, copy=False)


@dataclass(frozen=True)
class PairSet:
    """A set of batches packed into flat arrays (the layout every backend starts from).

    Reads ``r`` occupy ``read_bases[read_offsets[r]:read_offsets[r+1]]`` (likewise the four
    quality arrays and ``probs``); haplotypes likewise with ``hap_offsets``. Batch ``b`` owns reads
    ``batch_reads[b]:batch_reads[b+1]`` and haplotypes ``batch_haps[b]:batch_haps[b+1]``.
    Pair ``p`` aligns read ``pair_read[p]`` to haplotype ``pair_hap[p]``; pairs are in dataset order.
    """
    read_bases: np.ndarray
    read_offsets: np.ndarray
    base_qual: np.ndarray
    ins_qual: np.ndarray
    del_qual: np.ndarray
    gcp_qual: np.ndarray
    hap_bases: np.ndarray
    hap_offsets: np.ndarray
    batch_reads: np.ndarray
    batch_haps: np.ndarray
    expected: Optional[np.ndarray] = None
    pair_read: np.ndarray = field(init=False)
    pair_hap: np.ndarray = field(init=False)
    batch_pairs: np.ndarray = field(init=False)

    def __post_init__(self):
        nr = np.diff(self.batch_reads)
        nh = np.diff(self.batch_haps)
        npairs = nr * nh
        batch_pairs = np.zeros(len(npairs) + 1, dtype=np.int64)
        np.cumsum(npairs, out=batch_pairs[1:])
        total = int(batch_pairs[-1])
        # Vectorized read-major enumeration: within batch b, local pair k -> (k // nh, k % nh).
        batch_of = np.repeat(np.arange(len(npairs)), npairs)
        local = np.arange(total, dtype=np.int64) - batch_pairs[:-1][batch_of]
        nh_of = nh[batch_of]
        pair_read = self.batch_reads[:-1][batch_of] + local // np.maximum(nh_of, 1)
        pair_hap = self.batch_haps[:-1][batch_of] + local % np.maximum(nh_of, 1)
        object.__setattr__(self, "pair_read", pair_read.astype(np.int64))
        object.__setattr__(self, "pair_hap", pair_hap.astype(np.int64))
        object.__setattr__(self, "batch_pairs", batch_pairs)
        if self.expected is not None and len(self.expected) != total:
            raise ValueError(f"expected has {len(self.expected)} values for {total} pairs")

    @cached_property
    def probs(self) -> Probabilities:
        """float64 probabilities per read position, computed on first use: backends that derive
        them on the device from the qualities never pay for them."""
        return Probabilities.from_qualities(self.base_qual, self.ins_qual, self.del_qual,
                                            self.gcp_qual)

    # --- sizes ---------------------------------------------------------------------------------
    @property
    def n_batches(self) -> int:
        return len(self.batch_reads) - 1

    @property
    def n_pairs(self) -> int:
        return len(self.pair_read)

    @property
    def read_lengths(self) -> np.ndarray:
        return np.diff(self.read_offsets)

    @property
    def hap_lengths(self) -> np.ndarray:
        return np.diff(self.hap_offsets)

    @property
    def pair_read_lengths(self) -> np.ndarray:
        return self.read_lengths[self.pair_read]

    @property
    def pair_hap_lengths(self) -> np.ndarray:
        return self.hap_lengths[self.pair_hap]

    @property
    def cells(self) -> int:
        """Sum over pairs of read length x haplotype length (the GCUPS numerator): per batch, its
        reads' bases times its haplotypes' (every read meets every haplotype of its batch), so
        no array per pair (cuda-subwarp asks it on every large call)."""
        ro, ho, br, bh = self.read_offsets, self.hap_offsets, self.batch_reads, self.batch_haps
        return int(np.dot(ro[br[1:]] - ro[br[:-1]], ho[bh[1:]] - ho[bh[:-1]]))

    @property
    def max_read_length(self) -> int:
        return int(self.read_lengths.max(initial=0))

    @property
    def max_hap_length(self) -> int:
        return int(self.hap_lengths.max(initial=0))

    # --- views ---------------------------------------------------------------------------------
    def read(self, r: int) -> np.ndarray:
        return self.read_bases[self.read_offsets[r]:self.read_offsets[r + 1]]

    def hap(self, h: int) -> np.ndarray:
        return self.hap_bases[self.hap_offsets[h]:self.hap_offsets[h + 1]]

    def select_batches(self, start: int, stop: int) -> "PairSet":
        """Batches ``start:stop`` as a PairSet of their own (used for per-launch chunking)."""
        r0, r1 = int(self.batch_reads[start]), int(self.batch_reads[stop])
        h0, h1 = int(self.batch_haps[start]), int(self.batch_haps[stop])
        a0, a1 = int(self.read_offsets[r0]), int(self.read_offsets[r1])
        b0, b1 = int(self.hap_offsets[h0]), int(self.hap_offsets[h1])
        p0, p1 = int(self.batch_pairs[start]), int(self.batch_pairs[stop])
        return PairSet(
            read_bases=self.read_bases[a0:a1], read_offsets=self.read_offsets[r0:r1 + 1] - a0,
            base_qual=self.base_qual[a0:a1], ins_qual=self.ins_qual[a0:a1],
            del_qual=self.del_qual[a0:a1], gcp_qual=self.gcp_qual[a0:a1],
            hap_bases=self.hap_bases[b0:b1], hap_offsets=self.hap_offsets[h0:h1 + 1] - b0,
            batch_reads=self.batch_reads[start:stop + 1] - r0,
            batch_haps=self.batch_haps[start:stop + 1] - h0,
            expected=None if self.expected is None else self.expected[p0:p1])

    @classmethod
    def concatenate(cls, parts: Sequence["PairSet"]) -> "PairSet":
        """Join PairSets batch-wise (pairs keep their order)."""
        parts = list(parts)
        if not parts:
            return empty_pairset()

        def cat_offsets(offs):
            out, base = [np.zeros(1, np.int64)], 0
            for o in offs:
                out.append(o[1:] + base)
                base += int(o[-1])
            return np.concatenate(out)

        exp = None
        if all(p.expected is not None for p in parts):
            exp = np.concatenate([p.expected for p in parts])
        return cls(
            read_bases=np.concatenate([p.read_bases for p in parts]),
            read_offsets=cat_offsets([p.read_offsets for p in parts]),
            base_qual=np.concatenate([p.base_qual for p in parts]),
            ins_qual=np.concatenate([p.ins_qual for p in parts]),
            del_qual=np.concatenate([p.del_qual for p in parts]),
            gcp_qual=np.concatenate([p.gcp_qual for p in parts]),
            hap_bases=np.concatenate([p.hap_bases for p in parts]),
            hap_offsets=cat_offsets([p.hap_offsets for p in parts]),
            batch_reads=cat_offsets([p.batch_reads for p in parts]),
            batch_haps=cat_offsets([p.batch_haps for p in parts]),
            expected=exp)

    # The runner's view of a work unit, the same for every workload: items and a subset of them.
    @property
    def n_items(self) -> int:
        return self.n_pairs

    def subset(self, idx: np.ndarray) -> "PairSet":
        return self.subset_pairs(idx)

    def subset_pairs(self, pairs: np.ndarray) -> "PairSet":
        """Each selected pair as a batch of its own (1 read x 1 haplotype), in the given order.

        Used to recompute float32 underflows in float64 and to cross-check samples.
        """
        pairs = np.asarray(pairs, dtype=np.int64)
        reads, haps = self.pair_read[pairs], self.pair_hap[pairs]
        rl, hl = self.read_lengths[reads], self.hap_lengths[haps]
        r_idx = ranges(self.read_offsets[reads], rl)
        h_idx = ranges(self.hap_offsets[haps], hl)
        ro = np.zeros(len(pairs) + 1, np.int64)
        np.cumsum(rl, out=ro[1:])
        ho = np.zeros(len(pairs) + 1, np.int64)
        np.cumsum(hl, out=ho[1:])
        seq = np.arange(len(pairs) + 1, dtype=np.int64)
        return PairSet(
            read_bases=self.read_bases[r_idx], read_offsets=ro,
            base_qual=self.base_qual[r_idx], ins_qual=self.ins_qual[r_idx],
            del_qual=self.del_qual[r_idx], gcp_qual=self.gcp_qual[r_idx],
            hap_bases=self.hap_bases[h_idx], hap_offsets=ho,
            batch_reads=seq, batch_haps=seq.copy(),
            expected=None if self.expected is None else self.expected[pairs])


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s+l) for each (s, l), vectorized."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    out = np.ones(total, dtype=np.int64)
    out[0] = starts[0]
    nz = lengths > 0
    s, e, L = starts[nz], ends[nz], lengths[nz]
    # At each range start, jump from the previous range's last element to this range's start.
    idx = (e - L)[1:]
    out[idx] = s[1:] - (s[:-1] + L[:-1] - 1)
    return np.cumsum(out)


def exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive pieces of sizes ``x``: [0, x0, x0+x1, ...] (same length as x)."""
    out = np.zeros(len(x), np.int64)
    np.cumsum(x[:-1], out=out[1:])
    return out


def empty_pairset() -> PairSet:
    z8 = np.zeros(0, np.uint8)
    z = np.zeros(1, np.int64)
    return PairSet(read_bases=z8, read_offsets=z, base_qual=z8, ins_qual=z8, del_qual=z8,
                   gcp_qual=z8, hap_bases=z8, hap_offsets=z.copy(), batch_reads=z.copy(),
                   batch_haps=z.copy())


@dataclass
class Read:
    """One read as text (loaders build these; :func:`pack` turns many into a PairSet)."""
    bases: bytes
    base_qual: bytes
    ins_qual: bytes
    del_qual: bytes
    gcp_qual: bytes


@dataclass
class Batch:
    reads: list
    haplotypes: list
    expected: Optional[list] = None  # read-major expected log10 values, if the source has them


def pack(batches: Iterable[Batch]) -> PairSet:
    """Pack text batches (already validated by the loader) into a PairSet."""
    batches = list(batches)
    reads = [r for b in batches for r in b.reads]
    haps = [h for b in batches for h in b.haplotypes]

    def joined(chunks, decode):
        if not chunks:
            return np.zeros(0, np.uint8), np.zeros(1, np.int64)
        offs = np.zeros(len(chunks) + 1, np.int64)
        np.cumsum([len(c) for c in chunks], out=offs[1:])
        return decode(b"".join(chunks)), offs

    def quals(s):
        return (np.frombuffer(s, dtype=np.uint8) - 33).astype(np.uint8)

    read_bases, read_offsets = joined([r.bases for r in reads], encode_bases)
    bq, _ = joined([r.base_qual for r in reads], quals)
    iq, _ = joined([r.ins_qual for r in reads], quals)
    dq, _ = joined([r.del_qual for r in reads], quals)
    gq, _ = joined([r.gcp_qual for r in reads], quals)
    hap_bases, hap_offsets = joined(list(haps), encode_bases)
    br = np.zeros(len(batches) + 1, np.int64)
    np.cumsum([len(b.reads) for b in batches], out=br[1:])
    bh = np.zeros(len(batches) + 1, np.int64)
    np.cumsum([len(b.haplotypes) for b in batches], out=bh[1:])
    expected = None
    if batches and all(b.expected is not None for b in batches):
        expected = np.array([v for b in batches for v in b.expected], dtype=np.float64)
    return PairSet(read_bases=read_bases, read_offsets=read_offsets, base_qual=bq,
                   ins_qual=iq, del_qual=dq, gcp_qual=gq, hap_bases=hap_bases,
                   hap_offsets=hap_offsets, batch_reads=br, batch_haps=bh, expected=expected)
