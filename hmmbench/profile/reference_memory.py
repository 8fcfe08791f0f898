"""The NumPy reference's working memory (:mod:`cpu_reference.profile`), batch by batch: every
kind scores length-sorted batches of sequences, and a batch holds the most while its padded
code matrix is built or while its DP rows are filled beside the codes. ``profile-numpy``'s
estimate (:mod:`hmmbench.profile.reference`) takes the most of a cell's batches; the pipeline
(:mod:`hmmbench.profile.pipeline`) cuts the survivors of its MSV filter into slices that need no
more than the MSV filter's batches did, so that it holds no more however many pass."""
from __future__ import annotations

import numpy as np

from cpu_reference.profile import filters as pf
from cpu_reference.profile.bias import LOG_ROWS

#: sequences of about this many DP cells (sequences x model positions) form one batch of the
#: references: the int filters' and the float64 generic ones' (cpu_reference.profile)
FILTER_BATCH_CELLS, GENERIC_BATCH_CELLS = pf.BATCH_CELLS, 1 << 19
GENERIC_KINDS = ("viterbi", "forward", "gmsv")
#: a batch's padded code matrix being built (SequenceSet.padded): bytes per residue of the batch
#: (int64 row and column indexes, the two int64 source-index temporaries, the codes gathered)
#: and per padded cell (the uint8 matrix) -- measured: 32.1 per residue on proteins-20000's one
#: batch of 54 sequences padded to 974 (20,048 residues, 52,596 cells, traced peak 695,407 B);
#: 25.0 on proteins-200000's (NumPy reuses temporaries in place past 256 KiB)
PADDED_RESIDUE_BYTES, PADDED_CELL_BYTES = 33, 1
#: bytes per DP cell of a batch (its rows and their temporaries), by kind -- measured on
#: proteins-20000 and -200000 at M = 400 and 1500 (traced peak less the padded codes, per
#: sequence and fixed parts): ssv/msv 8.6, vf 34.3 (double-buffered rows), gmsv 27.8,
#: viterbi 81.6, forward 72.9 (57.6-77.7 on slices of 50-800 of proteins-2000000 at M = 400)
DP_BYTES = {"ssv": 10, "msv": 10, "vf": 36, "gmsv": 30, "viterbi": 88, "forward": 80}
#: the bias filter's batch (cpu_reference.profile.bias) beside its codes: per padded cell the
#: state-1 odds (float32), per sequence a block of LOG_ROWS row maxima (float32) and their
#: float64 logs being taken
BIAS_CELL_BYTES, BIAS_SEQUENCE_BYTES = 4, 20 * LOG_ROWS
#: the pipeline's stages past the MSV filter, on its survivors: the bias filter scores them in
#: place; the Viterbi filter and Forward on a copy of theirs (SequenceSet.subset: the residues,
#: an offset and a name's reference per sequence)
SURVIVOR_STAGES = ("bias", "vf", "forward")
COPY_SEQUENCE_BYTES = 16
#: bytes per model position (and fixed) of the tables each call on a slice builds from the
#: model: the Viterbi filter's score rows; Forward's probabilities of every residue code, match
#: and insert (float64, exponentiated in place), its transitions and the D->D stretches --
#: measured: 185, and Forward's 77, 260 and 806 KB beside one sequence's rows at M = 100, 400
#: and 1500 (950-975 bytes a position before its tables' temporaries went); a kind's own
#: batches hold them in their DP bytes
TABLE_BYTES = {"bias": 0, "vf": 200, "forward": 580}
TABLE_FIXED_BYTES = {"bias": 0, "vf": 0, "forward": 32 << 10}


def batch_need(sequences: int, residues: int, padded: int, M: int, kind: str) -> int:
    """The most one batch of ``sequences`` sequences, ``residues`` residues and ``padded``
    padded cells holds for ``kind`` (a kind of the reference, or the pipeline's ``bias``
    filter): its code matrix being built, or its rows being filled beside the codes."""
    building = PADDED_RESIDUE_BYTES * residues + PADDED_CELL_BYTES * padded
    if kind == "bias":
        rows = BIAS_CELL_BYTES * padded + BIAS_SEQUENCE_BYTES * sequences
    else:
        rows = sequences * M * DP_BYTES.get(kind, max(DP_BYTES.values()))
    return max(building, PADDED_CELL_BYTES * padded + rows)


def most_batch_need(shape, kind: str) -> int:
    """The most one of ``kind``'s batches holds over the batches of the cell's database that
    may hold the most (:meth:`hmmbench.profile.shape.ProfileShape.batches`)."""
    cells = GENERIC_BATCH_CELLS if kind in GENERIC_KINDS else FILTER_BATCH_CELLS
    per = max(1, cells // max(1, shape.M))
    return max((batch_need(n, residues, padded, shape.M, kind)
                for n, residues, padded in shape.batches(per)), default=0)


def slice_need(sequences: int, residues: int, padded: int, M: int, stage: str) -> int:
    """What a slice of survivors holds in one of SURVIVOR_STAGES: scored as one batch, beside
    the stage's tables and its copy (the Viterbi filter's and Forward's)."""
    copy = 0 if stage == "bias" else residues + COPY_SEQUENCE_BYTES * sequences
    return (batch_need(sequences, residues, padded, M, stage) + copy + TABLE_BYTES[stage] * M
            + TABLE_FIXED_BYTES[stage])


def survivor_slices(lengths, M: int, budget: int, stage: str) -> list:
    """(start, stop) of consecutive slices of the ascending ``lengths``, each as long as its
    :func:`slice_need` stays within ``budget`` (one sequence at least): the need only grows
    with the slice's end, so each end is bisected."""
    lengths = np.asarray(lengths, np.int64)
    ends = np.concatenate([[0], np.cumsum(lengths)])

    def need(s: int, e: int) -> int:
        return slice_need(e - s, int(ends[e] - ends[s]), (e - s) * int(lengths[e - 1]), M, stage)

    out, n, s = [], lengths.size, 0
    while s < n:
        lo, hi = s + 1, n                   # the slice s:lo fits (or is one sequence)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if need(s, mid) <= budget else (lo, mid - 1)
        out.append((s, lo))
        s = lo
    return out
