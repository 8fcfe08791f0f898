"""The generic Viterbi / Forward kernel (kernels_cuda/profile/generic.cu, a block per sequence)
on a resident database: its tables made and uploaded (:func:`generic_prepare`, ahead of the
launch where the caller can: the pipeline's Forward stage while SSV runs), its launch over a
device list of sequences (:func:`generic_launch`), both at once with the scores downloaded
(:func:`generic_scores`: ``profile-cuda-ganesan``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...apis import cuda
from .layout import generic_length_model, generic_tables, generic_threads

GENERIC_SOURCE = "profile/generic.cu"


def generic_prepare(db, model, forward: bool, host, up) -> tuple:
    """The generic kernel's device tables for ``model`` on the resident database ``db`` (msc,
    isc, tr, loop, move), the host's part timed as ``prep``, each array put on the device by
    ``up`` (the resident length model, where it is the model's, passes as it is)."""
    with host("prep"):
        lengths, on_device = generic_length_model(model, db)
        tables = generic_tables(model, forward)
    return tuple(up(a) for a in tables) + tuple(
        a if on_device else up(a) for a in (lengths["loop"], lengths["move"]))


def generic_launch(db, model, order, n_launch: int, forward: bool, timer, prepared: tuple,
                   out, threads: Optional[int] = None, tuning: Optional[dict] = None) -> None:
    """The generic kernel over the ``n_launch`` sequences of the device list ``order`` into
    ``out`` (float32 nats per sequence of ``db``), with the tables of :func:`generic_prepare`."""
    if not n_launch:
        return
    threads = threads or generic_threads(model.M)
    mod = cuda.compile(GENERIC_SOURCE, {"MODEL_M": model.M, "THREADS": threads,
                                        "FORWARD": int(forward), **(tuning or {})})
    msc, isc, tr, loopb, moveb = prepared
    b = db.buffers
    with timer("kernel"):
        mod.get_function("generic_dp")(
            msc, isc, tr, b["residues"], b["offsets"], order, np.int32(n_launch), loopb,
            moveb, np.float32(model.e_loop), np.float32(model.e_move), out,
            block=(threads, 1, 1), grid=(max(1, n_launch), 1))


def generic_scores(db, model, order, n_launch: int, forward: bool, timer, host,
                   scratch=None, threads: Optional[int] = None,
                   tuning: Optional[dict] = None) -> np.ndarray:
    """Generic Viterbi/Forward (float32 nats, one per sequence of the resident database
    ``db``) of the ``n_launch`` sequences of the device launch order ``order``; the others'
    entries are undefined. ``threads`` per block (a multiple of 32; default
    ``generic_threads(M)``), ``tuning``: more kernel defines (GN_PREFETCH)."""
    drv = cuda.driver()
    with timer("h2d"):
        prepared = generic_prepare(db, model, forward, host, drv.to_device)
    out = (scratch or cuda.DeviceBuffers()).get("generic_out", 4 * db.n)
    generic_launch(db, model, order, n_launch, forward, timer, prepared, out, threads, tuning)
    scores = np.empty(db.n, np.float32)
    with timer("d2h"):
        drv.memcpy_dtoh(scores, out)
    return scores
