"""Host side shared by the device backends of the profile filters (OpenCL, CUDA).

A device object computes HMMER's raw integers per sequence; :func:`filter_scores` orders the
launches (length-sorted, longest first, so neighbouring work-items/warps finish together), runs
the full MSV only where SSV cannot decide (HMMER's control flow) and finishes the integers into
nats with the reference's rules, so every backend reports exactly what HMMER reports.

Device protocol (arrays of length ``len(seqs)``, indexed by sequence; ``idx`` = sequences to run,
in launch order):
  ``ssv_xe(model, seqs, idx)``: SSV xE (128 + best diagonal, >= 255 - bias means overflow)
  ``msv_xj(model, seqs, idx, tjbm)``: full-MSV final xJ, -1 on overflow
  ``vf_xc(model, seqs, idx, move)``: Viterbi-filter final xC, 32768 on overflow
"""
from __future__ import annotations

import numpy as np

from cpu_reference.profile import filters as pf

from ..model import ProfileModel, SequenceSet

FILTER_KINDS = ("ssv", "msv", "vf")


def launch_order(seqs: SequenceSet, idx=None, lengths=None) -> np.ndarray:
    """``idx`` (default: every sequence) by decreasing length, ties in ``idx`` order;
    ``lengths``: those of ``idx`` where the caller has them (no pass over the database)."""
    if lengths is not None:
        L = np.asarray(lengths)
    else:
        L = seqs.lengths if idx is None else seqs.lengths[np.asarray(idx)]
    if L.size and L.max() <= 0xFFFF:      # 16-bit keys: numpy's stable sort is a radix sort
        key = np.invert(L.astype(np.uint16))              # 0xFFFF - L
    else:
        key = -L
    order = np.argsort(key, kind="stable")
    return (order if idx is None else np.asarray(idx)[order]).astype(np.int32)


def filter_scores(device, model: ProfileModel, seqs: SequenceSet, which: str, clock,
                  order=None) -> np.ndarray:
    """``which`` scores of every sequence; ``order``: the launch order when the caller holds it
    (a resident database's, laid out once)."""
    if which not in FILTER_KINDS:
        raise ValueError(f"unknown score {which!r} (one of {FILTER_KINDS})")
    L = seqs.lengths
    if order is None:
        with clock("prep"):
            order = launch_order(seqs)
    if which == "vf":
        with clock("prep"):
            move = model.word.move(L).astype(np.int16)
        xc = np.asarray(device.vf_xc(model, seqs, order, move), np.int64)
        with clock("prep"):
            return pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, L)
    xe = np.asarray(device.ssv_xe(model, seqs, order), np.int64)
    with clock("prep"):
        score, redo = pf.ssv_from_xe(model, xe, L)
    if which == "ssv" or not redo.any():
        return score
    with clock("prep"):
        bp = model.byte
        tjbm = ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8)      # HMMER's set1_epi8 wraps
        sub = launch_order(seqs, np.flatnonzero(redo))
    xj = np.asarray(device.msv_xj(model, seqs, sub, tjbm), np.int64)[sub]
    with clock("prep"):
        score[sub] = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L[sub])
    return score
