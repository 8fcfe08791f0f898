"""Realistic per-region chunk sets at any scale, generated lazily.

A *chunk* is what GATK's HaplotypeCaller hands the Pair-HMM for one active region: every read of
the region against every haplotype of the region -- one batch here. The real chunks of ``1m.in``
are simply its batches (chunking mode ``original``); this module generates sets shaped like the
published whole-sample statistics:

* chunk sizes 4..38,912 pairs, ~82 % of chunks under 200 pairs (Ren et al. 2016 and 2018, GATK
  3.6 on chromosome 10 of a whole human genome);
* read lengths 10..151 with mean 58, haplotype lengths 30..521 (gpuPairHMM, NA12878: 55,125,211
  pairs; at 1.82 TCUPS in 0.69 s that is ~22,800 cells per pair).

How the distributions are derived
---------------------------------
* Chunk size: log-normal, truncated to [4, 38912] by redrawing. Two facts fix its two parameters:
  P(size < 200) = 0.82 (z = 0.915) and 38,912 as the one-in-a-million largest chunk (z = 4.753):
  sigma = ln(38912/200) / (4.753 - 0.915) = 1.374, mu = ln 200 - 0.915 sigma = 4.041 (median
  57 pairs, mean ~146 pairs).
* Shape of a chunk of size s: haplotype count h is 2 with probability 0.55 (the median of 1m.in),
  else 3 + floor(14 v^2) (3..16, a tail like 1m.in's); h is at most s/2; reads r = round(s/h) with
  at least 2. The pair count is r*h (within half a read of s).
* Read length: 10 + floor(142 u^k), capped at the chunk's shortest haplotype (GATK trims reads
  to the region). Uncapped, the mean is 10 + 142/(k+1) - 1/2; k = 1.872 puts the capped mean at
  58 (measured: 57.99 over the NA12878-sized plan), range 10..151 (many short, trimmed reads).
* Haplotype length: per chunk 521 - floor(492 u^a) with a = 2.84, mean 521 - 492/(a+1) = 393, so
  mean cells per pair 58 x 393 ~ 22,800 matches NA12878 (measured over the plan: 23,170);
  haplotypes of one chunk differ by up
  to 3 bases (indels between haplotypes), clipped to 30..521.
* Bases and qualities: :func:`hmmbench.pairhmm.datasets.synthetic.simulate`.

The *plan* (every chunk's shape and every read and haplotype length) is drawn first, cheaply, so
``n_pairs`` and ``n_cells`` are known up front; bases are generated piece by piece (~2e6 pairs,
whole chunks) with a random stream per piece, so any piece can be regenerated alone.

Names: ``chunks-na12878`` (55,125,211 pairs, always lazy) and ``chunks[@PAIRS][:seed=S]``
(default 10,000 pairs). The pair count is exact: the last chunk takes the remainder.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Optional

import numpy as np

from ..model import PairSet
from ..shape import (PairShape, most_pairs_by_read_length, pairs_by_read_length,
                     wavefront_groups)
from ...dataset import Dataset
from .synthetic import (DEFAULT_SEED, GENERATOR_VERSION, join_name, params_sha256, rng_for,
                        simulate, simulate_bytes, split_name)

NA12878_PAIRS = 55_125_211
DEFAULT_CHUNK_PAIRS = 10_000
MIN_CHUNK, MAX_CHUNK = 4, 38_912
SIZE_MU, SIZE_SIGMA = 4.041, 1.374
READ_MIN, READ_MAX, READ_POWER = 10, 151, 1.872
HAP_MIN, HAP_MAX, HAP_POWER = 30, 521, 2.84
HAP_INDEL_RATE, HAP_INDEL_MAX = 0.3, 3
PIECE_PAIRS = 2_000_000
#: Sets up to this many pairs load in one piece; larger ones are only lazy.
EAGER_LIMIT = 4_000_000
_DRAW_BLOCK = 1 << 16
#: Read positions whose pairs give a plan's shape its wavefront groups: as many as the NumPy
#: reference lays out at once (hmmbench.pairhmm.reference.PIECE_READ_BASES), whose groups
#: are what its memory depends on; every piece is drawn alike, so the first ones serve.
GROUP_SAMPLE_READ_BASES = 1 << 21
# Stream tags, so that each part of the plan has its own independent random stream.
_SIZES, _SHAPES, _HAPS, _READS, _BASES = 1, 2, 3, 4, 5


@dataclass
class ChunkPlan:
    """Every chunk's shape and every read/haplotype length, in dataset order."""
    reads_per_chunk: np.ndarray
    haps_per_chunk: np.ndarray
    read_lengths: np.ndarray
    hap_lengths: np.ndarray

    @property
    def chunk_pairs(self) -> np.ndarray:
        return self.reads_per_chunk * self.haps_per_chunk

    @property
    def n_pairs(self) -> int:
        return int(self.chunk_pairs.sum())

    @property
    def n_cells(self) -> int:
        read_sum = np.add.reduceat(self.read_lengths, _starts(self.reads_per_chunk))
        hap_sum = np.add.reduceat(self.hap_lengths, _starts(self.haps_per_chunk))
        return int(np.dot(read_sum.astype(np.int64), hap_sum.astype(np.int64)))

    def pieces(self, piece_pairs: Optional[int] = None) -> list[tuple[int, int]]:
        """Consecutive chunk ranges of about piece_pairs (PIECE_PAIRS) pairs each (chunks
        never split)."""
        piece_pairs = piece_pairs or PIECE_PAIRS
        starts = np.concatenate([[0], np.cumsum(self.chunk_pairs)[:-1]])
        group = starts // piece_pairs
        cut = np.flatnonzero(np.diff(group)) + 1
        edges = np.concatenate([[0], cut, [len(starts)]])
        return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


class PlanLengths:
    """Per chunk of a plan (one batch each): its reads, haplotypes, pairs, read and haplotype
    bases and DP cells; the shape of runs of chunks from them, nothing generated."""

    def __init__(self, plan: ChunkPlan):
        self.plan = plan
        self.r = plan.reads_per_chunk.astype(np.int64)
        self.h = plan.haps_per_chunk.astype(np.int64)
        self.rs, self.hs = _starts(self.r), _starts(self.h)
        rl, hl = plan.read_lengths.astype(np.int64), plan.hap_lengths.astype(np.int64)
        self.read_sum, self.hap_sum = np.add.reduceat(rl, self.rs), np.add.reduceat(hl, self.hs)
        self.pairs = self.r * self.h
        self.cells = self.read_sum * self.hap_sum
        self.extremes = int(rl.min()), int(rl.max()), int(hl.max())

    def pair_lengths(self, a: int, b: int, idx: np.ndarray) -> tuple:
        """(read lengths, haplotype lengths) of pairs ``idx`` of the run of chunks [a, b), in
        the order a made unit holds them: chunk by chunk, each chunk's pairs read-major (every
        haplotype of its first read, then of the next)."""
        ends = np.cumsum(self.pairs[a:b])
        c = np.searchsorted(ends, idx, side="right")
        j = idx - (ends[c] - self.pairs[a + c])
        chunk = a + c
        rl, hl = self.plan.read_lengths, self.plan.hap_lengths
        return (rl[self.rs[chunk] + j // self.h[chunk]].astype(np.int64),
                hl[self.hs[chunk] + j % self.h[chunk]].astype(np.int64))

    def pairs_by_read_length(self, a: int, b: int) -> tuple:
        """:attr:`PairShape.pairs_by_read_length` of the run of chunks [a, b): each read in a
        pair with every haplotype of its chunk."""
        first = int(self.rs[a])
        reads = slice(first, first + int(self.r[a:b].sum()))
        return pairs_by_read_length(self.plan.read_lengths[reads],
                                    np.repeat(self.h[a:b], self.r[a:b]),
                                    np.repeat(self.hap_sum[a:b], self.r[a:b]))

    def shape(self, spans, groups: bool = False) -> PairShape:
        """Chunk ranges ``(a, b)``: each count the most of any of them; ``groups``: with the
        wavefront groups of the plan's first chunks, as many read positions as the shape's."""
        def most(per_chunk) -> int:
            return max(int(per_chunk[a:b].sum()) for a, b in spans)
        min_read, max_read, max_hap = self.extremes
        shape = PairShape(
            pairs=most(self.pairs), reads=most(self.r), haps=most(self.h),
            read_bases=most(self.read_sum), hap_bases=most(self.hap_sum),
            min_read=min_read, max_read=max_read, max_hap=max_hap,
            batches=max(b - a for a, b in spans), max_batch_pairs=int(self.pairs.max()),
            max_batch_read_bases=int(self.read_sum.max()),
            pairs_by_read_length=most_pairs_by_read_length(
                [self.pairs_by_read_length(a, b) for a, b in spans]))
        if groups:
            shape = replace(shape, groups=_sample_groups(self.plan, self.r, self.h, self.rs,
                                                         self.hs, shape.read_bases))
        return shape


def plan_unit_ranges(plan: ChunkPlan, unit_items: Optional[int] = None,
                     lengths: Optional["PlanLengths"] = None) -> list:
    """The chunk ranges ``(a, b)`` of the units the runner makes of a plan's pieces (its
    grouped_pieces): consecutive pieces joined into units of at most ``unit_items`` pairs (a
    piece larger than that alone; 0: one piece a unit; None: the whole set)."""
    lengths = lengths or PlanLengths(plan)
    lazy = unit_items is not None
    units, size = [], 0
    for a, b in plan.pieces():
        n = int(lengths.pairs[a:b].sum())
        if units and (not lazy or 0 < unit_items and size + n <= unit_items):
            units[-1], size = (units[-1][0], b), size + n
        else:
            units.append((a, b))
            size = n
    return units


def plan_shape(plan: ChunkPlan, unit_items: Optional[int] = None) -> PairShape:
    """The shape of the largest unit a backend is given, from the plan's lengths alone (no
    bases generated): consecutive pieces joined into units of at most ``unit_items`` pairs, as
    the runner joins a lazy set's pieces (a piece larger than that alone; 0: one piece a unit;
    None: the whole set, as it is loaded), each count the most any unit has. Its
    ``held_bytes``: the unit, and its pieces beside it when they were joined; its
    ``making_bytes``: the most held while a unit is made (:func:`_making_bytes`, the previous
    unit still referenced until the next one is handed over)."""
    lengths = PlanLengths(plan)
    bounds = plan.pieces()
    lazy = unit_items is not None
    units = plan_unit_ranges(plan, unit_items, lengths)
    k = max(sum(1 for a, _ in bounds if lo <= a < hi) for lo, hi in units)
    shape = lengths.shape(units, groups=True)
    unit = shape.nbytes
    making = _making_bytes(unit if lazy else 0, unit, lengths.shape(bounds), k)
    return replace(shape, held_bytes=2 * unit if lazy and k > 1 else unit,
                   making_bytes=making, pieces=k if lazy else 1)


def _making_bytes(previous: int, unit: int, piece: PairShape, k: int) -> int:
    """The most held while a unit of ``k`` pieces is made: ``previous`` bytes still referenced,
    the pieces made so far and one at its generation peak, or (k > 1) the pieces and their
    joined copy."""
    making = previous + (k - 1) * piece.nbytes + simulate_bytes(
        piece.read_bases, piece.hap_bases, piece.pairs)
    if k > 1:
        making = max(making, previous + 2 * unit)
    return int(making)


@dataclass
class PlannedUnits:
    """A plan's pieces joined ``join`` at a time into units, as a sharded run's workers make
    them (:func:`hmmbench.cluster.shards.joined`), known from the lengths alone."""
    lengths: PlanLengths
    units: list                  # per unit, its chunk range (lo, hi): one batch a chunk
    making_bytes: int            # the most held while one is made, the previous one referenced

    def costs(self, unit: int) -> np.ndarray:
        """DP cells per batch of a unit (what ``PairHMM.shard_costs`` gives the made unit)."""
        lo, hi = self.units[unit]
        return self.lengths.cells[lo:hi]

    def shape(self, runs, groups: bool = False) -> PairShape:
        """Runs ``(unit, start, stop)`` of units' batches: each count the most of any."""
        return self.lengths.shape([(self.units[u][0] + a, self.units[u][0] + b)
                                   for u, a, b in runs], groups)


def plan_units(plan: ChunkPlan, join: int) -> PlannedUnits:
    """The plan's pieces joined ``join`` at a time (the last join may hold fewer); the making
    bytes of the largest, the previous unit still referenced."""
    lengths = PlanLengths(plan)
    bounds = plan.pieces()
    groups = [bounds[i:i + join] for i in range(0, len(bounds), join)]
    units = [(g[0][0], g[-1][1]) for g in groups]
    unit = lengths.shape(units).nbytes
    return PlannedUnits(lengths, units, _making_bytes(unit, unit, lengths.shape(bounds),
                                                      max(len(g) for g in groups)))


def _sample_groups(plan: ChunkPlan, r, h, rs, hs, most: int) -> tuple:
    """The wavefront groups of the plan's first chunks, GROUP_SAMPLE_READ_BASES read
    positions' worth (at most ``most``, a unit's): every read of a chunk against every
    haplotype of it."""
    read_ends = np.cumsum(np.add.reduceat(plan.read_lengths.astype(np.int64), rs))
    n = int(np.searchsorted(read_ends, min(most, GROUP_SAMPLE_READ_BASES))) + 1
    pm, ph = [], []
    for c in range(min(n, len(r))):
        reads = plan.read_lengths[rs[c]:rs[c] + r[c]]
        haps = plan.hap_lengths[hs[c]:hs[c] + h[c]]
        pm.append(np.repeat(reads, len(haps)))
        ph.append(np.tile(haps, len(reads)))
    return wavefront_groups(np.concatenate(pm), np.concatenate(ph))


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def _chunk_sizes(seed: int, n_pairs: int) -> np.ndarray:
    """Truncated log-normal chunk sizes, drawn in fixed blocks until they cover n_pairs."""
    rng = rng_for(seed, GENERATOR_VERSION, _SIZES)
    sizes, total = [], 0
    while total < n_pairs:
        u1, u2 = rng.random(_DRAW_BLOCK), rng.random(_DRAW_BLOCK)
        z = np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)   # Box-Muller
        s = np.rint(np.exp(SIZE_MU + SIZE_SIGMA * z)).astype(np.int64)
        s = s[(s >= MIN_CHUNK) & (s <= MAX_CHUNK)]
        sizes.append(s)
        total += int(s.sum())
    return np.concatenate(sizes)


def _shape(sizes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    u, v = rng.random(len(sizes)), rng.random(len(sizes))
    h = np.where(u < 0.55, 2, 3 + (14 * v * v).astype(np.int64))
    h = np.minimum(h, sizes // 2)
    r = np.maximum(np.rint(sizes / h).astype(np.int64), 2)
    r = np.minimum(r, MAX_CHUNK // h)
    return r, h


def _exact_shape(n: int) -> tuple[int, int]:
    """Reads x haplotypes with exactly n pairs: the smallest haplotype count 2..16 dividing n."""
    for h in range(2, 17):
        if n % h == 0 and n // h >= 2:
            return n // h, h
    return n, 1


def make_plan(n_pairs: int, seed: int = DEFAULT_SEED) -> ChunkPlan:
    """The chunk plan for exactly n_pairs pairs (no bases generated)."""
    shape_rng = rng_for(seed, GENERATOR_VERSION, _SHAPES)
    sizes = _chunk_sizes(seed, n_pairs)
    r, h = _shape(sizes, shape_rng)
    pairs = np.cumsum(r * h)
    keep = int(np.searchsorted(pairs, n_pairs, side="left"))   # chunks[:keep] stay below n_pairs
    r, h = r[:keep], h[:keep]
    rem = n_pairs - (int(pairs[keep - 1]) if keep else 0)
    if rem and rem < MIN_CHUNK and keep:      # too small alone: fold into the previous chunk
        rem += int(r[-1] * h[-1])
        r, h = r[:-1], h[:-1]
    if rem:
        lr, lh = _exact_shape(rem)
        r, h = np.append(r, lr), np.append(h, lh)

    hap_rng = rng_for(seed, GENERATOR_VERSION, _HAPS)
    n_chunks, n_haps = len(r), int(h.sum())
    chunk_hap = HAP_MAX - (492 * hap_rng.random(n_chunks) ** HAP_POWER).astype(np.int64)
    chunk_hap = np.clip(chunk_hap, HAP_MIN, HAP_MAX)
    u, v = hap_rng.random(n_haps), hap_rng.random(n_haps)
    delta = np.where(u < HAP_INDEL_RATE,
                     (v * (2 * HAP_INDEL_MAX + 1)).astype(np.int64) - HAP_INDEL_MAX, 0)
    first = np.zeros(n_haps, bool)
    first[_starts(h)] = True
    hap_lengths = np.repeat(chunk_hap, h) + np.where(first, 0, delta)
    hap_lengths = np.clip(hap_lengths, HAP_MIN, HAP_MAX).astype(np.int32)

    read_rng = rng_for(seed, GENERATOR_VERSION, _READS)
    n_reads = int(r.sum())
    read_lengths = (READ_MIN + ((READ_MAX - READ_MIN + 1) * read_rng.random(n_reads) ** READ_POWER)
                    .astype(np.int64))
    # GATK trims reads to the region, so a read is never longer than its chunk's haplotypes.
    shortest_hap = np.minimum.reduceat(hap_lengths, _starts(h))
    read_lengths = np.minimum(read_lengths, np.repeat(shortest_hap, r)).astype(np.int32)
    return ChunkPlan(r, h, read_lengths, hap_lengths)


def generate_piece(plan: ChunkPlan, seed: int, piece: int, lo: int, hi: int) -> PairSet:
    """Bases and qualities for chunks lo:hi of the plan."""
    rs, hs = _starts(plan.reads_per_chunk), _starts(plan.haps_per_chunk)
    r0, h0 = int(rs[lo]), int(hs[lo])
    r1 = int(rs[hi]) if hi < len(rs) else len(plan.read_lengths)
    h1 = int(hs[hi]) if hi < len(hs) else len(plan.hap_lengths)
    return simulate(rng_for(seed, GENERATOR_VERSION, _BASES, piece),
                    plan.reads_per_chunk[lo:hi], plan.haps_per_chunk[lo:hi],
                    plan.read_lengths[r0:r1], plan.hap_lengths[h0:h1])


def iter_pieces(plan: ChunkPlan, seed: int, piece_pairs: Optional[int] = None
                ) -> Iterator[PairSet]:
    for k, (lo, hi) in enumerate(plan.pieces(piece_pairs or PIECE_PAIRS)):
        yield generate_piece(plan, seed, k, lo, hi)


def chunks_dataset(name: str) -> Optional[Dataset]:
    """The Dataset for a chunk-set name (plan drawn on first use of n_pairs/n_cells), or None."""
    base, pairs, seed = split_name(name)
    if base == "chunks-na12878":
        pairs, lazy_only = NA12878_PAIRS if pairs is None else pairs, True
        default = NA12878_PAIRS
        what = "NA12878-sized chunk set (gpuPairHMM's 55,125,211 pairs)"
    elif base == "chunks":
        default = DEFAULT_CHUNK_PAIRS
        pairs = default if pairs is None else pairs
        lazy_only = pairs > EAGER_LIMIT
        what = "realistic per-region chunk set"
    else:
        return None
    seed = DEFAULT_SEED if seed is None else seed
    return LazyChunkDataset.build(base, pairs, default, seed, lazy_only, what)


class LazyChunkDataset(Dataset):
    """A Dataset whose plan (and so n_cells) is drawn only when first asked for."""

    @classmethod
    def build(cls, base, pairs, default, seed, lazy_only, what) -> "LazyChunkDataset":
        params = {"pairs": pairs, "piece_pairs": PIECE_PAIRS}
        ds = cls(name=join_name(base, pairs, default, seed), kind="chunks",
                 description=(f"{what}: {pairs} pairs in chunks of {MIN_CHUNK}..{MAX_CHUNK} pairs "
                              f"(one batch per chunk; ~82 % under 200), "
                              f"reads {READ_MIN}..{READ_MAX} "
                              f"(mean 58), haplotypes {HAP_MIN}..{HAP_MAX}, seed {seed}"),
                 sha256=params_sha256("chunks", base, params, seed),
                 n_pairs=pairs, params={**params, "seed": seed})
        ds._seed, ds._plan = seed, None
        ds.chunk_loader = lambda: iter_pieces(ds.plan, seed)
        if not lazy_only:
            ds.loader = lambda: PairSet.concatenate(list(iter_pieces(ds.plan, seed)))
        return ds

    @property
    def plan(self) -> ChunkPlan:
        if self._plan is None:
            self._plan = make_plan(self.n_pairs, self._seed)
        return self._plan

    @property
    def plan_drawn(self) -> bool:
        """Whether the plan exists yet (drawing NA12878's takes seconds: a catalog waits for it
        only when asked)."""
        return self._plan is not None

    @property
    def n_cells(self) -> int:
        return self.plan.n_cells

    @n_cells.setter
    def n_cells(self, value) -> None:
        """Dataset.__init__ assigns a placeholder; the plan is the source of truth."""
