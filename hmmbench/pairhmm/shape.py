"""The shape of a pair set: the counts and lengths its memory depends on, known before it is
generated (a synthetic set's name says it) or read off a loaded :class:`PairSet`.

Backends estimate their working memory from it (:meth:`hmmbench.backend.Backend.memory_need`);
the runner compares the estimates with the memory limit before anything is allocated.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from cpu_reference.pairhmm.forward import DEFAULT_GROUP_ELEMENTS, group_pairs

from .model import PairSet


#: How many times its pairs each group of a check's sample is budgeted at (:func:`sampled_groups`):
#: fitted so that drawing and computing a 100-500 pair sample was estimated at 1.08-1.32x its
#: traced peak on six shapes, never below (2 gave up to 1.49x, 1.5 gave 1.00x).
SAMPLE_GROUP_GROWTH = 1.7


@dataclass(frozen=True)
class PairShape:
    pairs: int
    reads: int
    haps: int
    read_bases: int               # sum of read lengths
    hap_bases: int
    min_read: int
    max_read: int
    max_hap: int
    batches: int
    max_batch_pairs: int          # the largest batch (a launch of chunking 'original')
    max_batch_read_bases: int
    #: The NumPy reference's wavefront groups (cpu_reference.pairhmm.forward.group_pairs), in
    #: the order it runs them: per group its (rows x pairs, skewed columns x pairs, columns x
    #: pairs) elements; None: bounded from the lengths alone (one read length: full groups).
    groups: Optional[tuple] = None
    #: Bytes the runner holds beside a call on a unit of this shape (None: the unit itself,
    #: ``nbytes``), and the most it holds while it makes the unit (a set generated piece by
    #: piece: the previous unit, the pieces, one being generated, their joined copy).
    held_bytes: Optional[int] = None
    making_bytes: int = 0
    #: A set generated piece by piece: the most pieces one unit joins (the cross-check samples
    #: as many items of each).
    pieces: int = 1
    #: Per read length that occurs, ascending: (length, pairs whose read is at least that long,
    #: the haplotype columns of those pairs) -- what kernels that work on long reads only budget
    #: (:meth:`pairs_longer_than`); None: unknown (every pair counted, at the longest haplotype).
    pairs_by_read_length: Optional[tuple] = None

    @classmethod
    def of(cls, pairs: PairSet, groups: bool = True) -> "PairShape":
        """A loaded set's shape (``groups``: False leaves out the wavefront groups, a walk
        over the pairs: the counts and the bytes are the same)."""
        rl = pairs.read_lengths
        br = pairs.read_offsets[pairs.batch_reads]
        m, n = pairs.pair_read_lengths, pairs.pair_hap_lengths
        return cls(pairs=pairs.n_pairs, reads=len(rl), haps=len(pairs.hap_lengths),
                   read_bases=int(pairs.read_offsets[-1]), hap_bases=int(pairs.hap_offsets[-1]),
                   min_read=int(rl.min()) if len(rl) else 0,
                   max_read=pairs.max_read_length, max_hap=pairs.max_hap_length,
                   batches=pairs.n_batches,
                   max_batch_pairs=int(np.diff(pairs.batch_pairs).max(initial=0)),
                   max_batch_read_bases=int(np.diff(br).max(initial=0)),
                   groups=wavefront_groups(m, n) if groups and len(np.unique(rl)) > 1 else None,
                   pairs_by_read_length=pairs_by_read_length(m, np.ones(len(m), np.int64), n))

    @classmethod
    def fixed(cls, read_length: int, hap_length: int, n_reads: int, n_haps: int, n_pairs: int,
              batches: int, batch_reads: int, batch_haps: int) -> "PairShape":
        """Every read of one length, every haplotype of another (the generated sets)."""
        return cls(pairs=n_pairs, reads=n_reads, haps=n_haps,
                   read_bases=n_reads * read_length, hap_bases=n_haps * hap_length,
                   min_read=read_length, max_read=read_length, max_hap=hap_length,
                   batches=batches, max_batch_pairs=batch_reads * batch_haps,
                   max_batch_read_bases=batch_reads * read_length,
                   pairs_by_read_length=((read_length, n_pairs, n_pairs * hap_length),)
                   if n_pairs else ())

    @property
    def nbytes(self) -> int:
        """What the PairSet itself holds: bases and four qualities per read position, a base
        per haplotype position, offsets, and the pair and batch index arrays."""
        return (5 * self.read_bases + self.hap_bases + 8 * (self.reads + self.haps)
                + 16 * self.pairs + 32 * self.batches)

    @property
    def held(self) -> int:
        return self.nbytes if self.held_bytes is None else self.held_bytes

    def pairs_longer_than(self, rows: int) -> tuple[int, int]:
        """(pairs whose read is longer than ``rows``, their haplotype columns): from
        :attr:`pairs_by_read_length`, never more than the shape's pairs (a part of a set, a
        launch, a recompute's piece: the set's long pairs may all be in it), each at most the
        longest haplotype."""
        if rows >= self.max_read:
            return 0, 0
        pairs, columns = self.pairs, self.pairs * self.max_hap
        if self.pairs_by_read_length is not None:
            _, most_pairs, most_columns = next(
                (entry for entry in self.pairs_by_read_length if entry[0] > rows), (0, 0, 0))
            pairs, columns = min(pairs, most_pairs), min(columns, most_columns)
        return pairs, min(columns, pairs * self.max_hap)

    def part(self, read_bases: int) -> "PairShape":
        """The share of the set that holds about ``read_bases`` read positions (whole batches,
        at least the largest one): a launch of ``merged:N`` or a piece a backend cuts."""
        if read_bases >= self.read_bases or self.read_bases == 0:
            return self
        take = max(read_bases, self.max_batch_read_bases)
        f = take / self.read_bases

        def share(n: int) -> int:
            return min(n, max(1, int(np.ceil(n * f))))
        return replace(self, pairs=share(self.pairs), reads=share(self.reads),
                       haps=share(self.haps), read_bases=min(self.read_bases, take),
                       hap_bases=share(self.hap_bases), batches=share(self.batches))

    def launch(self, mode: str) -> "PairShape":
        """The largest launch of a chunking mode (``original``: one batch; ``merged:N``: about
        N pairs; ``merged``: everything)."""
        from .datasets.chunking import parse_mode
        kind, size = parse_mode(mode)
        if kind == "original":
            return self.part(self.max_batch_read_bases)
        if size and self.pairs and size < self.pairs:
            return self.part(int(np.ceil(self.read_bases * size / self.pairs)))
        return self

    def each_pair_alone(self) -> "PairShape":
        """Every pair as a batch of its own, its read copied (``PairSet.subset_pairs``: the
        float32 backends' float64 recompute)."""
        per_pair = self.read_bases / max(self.reads, 1) * max(self.pairs / max(self.reads, 1), 1)
        bases = int(np.ceil(per_pair * self.reads))
        return replace(self, reads=self.pairs, haps=self.pairs, read_bases=bases,
                       hap_bases=int(np.ceil(self.hap_bases * self.pairs / max(self.haps, 1))),
                       batches=self.pairs, max_batch_pairs=1,
                       max_batch_read_bases=self.max_read)


def sampled_groups(groups: tuple, k: int) -> tuple:
    """The wavefront groups of ``k`` pairs drawn evenly from a set of these ``groups`` (a
    check's sample; the set's own groups cut to ``k`` pairs each budgeted a 200-pair sample at
    4x its peak). Each group is (size, rows, cols) again -- size = rows x pairs + pairs -
    skewed + columns -- and the sample's pairs stand at their group's largest lengths, grouped
    as the reference groups them. A random draw's groups vary with it (the check's draws had
    up to 1.9x the even draw's elements in a group), so each is budgeted at
    SAMPLE_GROUP_GROWTH times its pairs, at most a full group."""
    sizes, rows, cols = [], [], []
    for elements, skew, final in groups:
        size = elements - skew + final
        sizes.append(size)
        rows.append((skew - final) // max(size, 1))
        cols.append(final // max(size, 1))
    ends = np.cumsum(sizes)
    if not len(ends) or not ends[-1] or k <= 0:
        return ()
    picks = np.minimum(((np.arange(k) + 0.5) * ends[-1] / k).astype(np.int64), ends[-1] - 1)
    which = np.searchsorted(ends, picks, side="right")
    even = wavefront_groups(np.asarray(rows, dtype=np.int64)[which],
                            np.asarray(cols, dtype=np.int64)[which])
    out = []
    for elements, skew, final in even:
        size = elements - skew + final
        r = (skew - final) // size
        grown = max(size, min(int(SAMPLE_GROUP_GROWTH * size),
                              DEFAULT_GROUP_ELEMENTS // (r + 1)))
        out.append((elements * grown // size, skew * grown // size, final * grown // size))
    return tuple(out)


def drawn_shape(read_lengths: np.ndarray, hap_lengths: np.ndarray, rows: int = 0) -> PairShape:
    """The shape of a drawn sample of pairs of these lengths (the check's: each pair a batch
    of its own, its read and haplotype copied, ``PairSet.subset_pairs``), with what drawing it
    holds: an int64 index of every position and its running sum beside the copy, and the
    lengths of the ``rows`` reads (or haplotypes, the more) of the unit it is drawn from
    (``PairSet.read_lengths``, derived while it draws: 29 KiB on 1m's, more than a 2-pair
    sample's own 28)."""
    m, n, k = read_lengths.astype(np.int64), hap_lengths.astype(np.int64), len(read_lengths)
    shape = PairShape(pairs=k, reads=k, haps=k, read_bases=int(m.sum()), hap_bases=int(n.sum()),
                      min_read=int(m.min()) if k else 0, max_read=int(m.max(initial=0)),
                      max_hap=int(n.max(initial=0)), batches=k, max_batch_pairs=1,
                      max_batch_read_bases=int(m.max(initial=0)),
                      groups=wavefront_groups(m, n) if len(np.unique(m)) > 1 else None,
                      pairs_by_read_length=pairs_by_read_length(m, np.ones(k, np.int64), n))
    return replace(shape, making_bytes=shape.nbytes + 16 * (shape.read_bases + shape.hap_bases)
                   + 8 * rows)


def wavefront_groups(read_lengths: np.ndarray, hap_lengths: np.ndarray) -> tuple:
    """The NumPy reference's groups of pairs of these lengths (a Python walk over the pairs,
    about a second per million), in run order: their element counts (see PairShape.groups)."""
    m, n = read_lengths, hap_lengths
    out = []
    for idx in group_pairs(m, n):
        rows, cols, size = int(m[idx].max()), int(n[idx].max()), len(idx)
        out.append((size * (rows + 1), size * (rows + cols), size * cols))
    return tuple(out)


def pairs_by_read_length(read_lengths: np.ndarray, pairs: np.ndarray,
                         columns: np.ndarray) -> tuple:
    """:attr:`PairShape.pairs_by_read_length` of reads of these lengths, each in ``pairs``
    pairs of ``columns`` haplotype columns in all (a loaded set's pairs: one pair each)."""
    if not len(read_lengths):
        return ()
    # per length (counted in float64: exact below 2**53), then at least that long
    per_length = [np.bincount(read_lengths, weights=w) for w in (pairs, columns)]
    at = np.flatnonzero(per_length[0])
    at_least = [np.rint(np.cumsum(w[::-1])[::-1][at]).astype(np.int64) for w in per_length]
    return tuple(zip(at.tolist(), *(a.tolist() for a in at_least)))


def most_pairs_by_read_length(summaries: list) -> tuple:
    """Several parts' :attr:`PairShape.pairs_by_read_length` as one that counts, past each
    length, the most any of them has (a shape whose counts are the most of any of its parts)."""
    lengths = np.unique([entry[0] for summary in summaries for entry in summary])
    most = np.zeros((2, len(lengths) + 1), np.int64)          # past the longest: none
    for summary in summaries:
        if summary:
            own = np.array(summary, np.int64).T
            at = np.searchsorted(own[0], lengths)
            inside = np.flatnonzero(at < own.shape[1])
            most[:, inside] = np.maximum(most[:, inside], own[1:, at[inside]])
    # a length with the same counts as the next one says nothing the next one does not
    keep = np.flatnonzero(np.any(most[:, :-1] != most[:, 1:], axis=0))
    return tuple(zip(lengths[keep].tolist(), most[0, keep].tolist(), most[1, keep].tolist()))
