"""A batch of models' search on a device's resident database (``--batch-models K``).

A batch's device search (:func:`batch_scores`, the protocol of
:mod:`.pipeline` plus ``copy_bytes``, ``scratch``, ``upload_list``,
``download_ints``): one SSV launch of the K models over the resident launch order, each model's
xE finished on the device as a single model's is; kind ``msv``: the sequences that some model's
SSV cannot decide (the union of the models' recompute lists, small) go through one full-MSV
launch of the K models, and each model's recomputes are finished from its part of that output.
"""
from __future__ import annotations

import numpy as np

from ..batch import BATCH_KINDS
from .host import launch_order
from .pipeline import device_scores


def batch_scores(dev, models: list, db, kind: str, host) -> np.ndarray:
    """Scores of ``kind`` (ssv or msv) of every model against the resident database ``db``,
    model-major (float32 nats, as :func:`.pipeline.device_scores` gives for each model
    alone)."""
    if kind not in BATCH_KINDS:
        raise ValueError(f"kind {kind!r} does not batch (only {', '.join(BATCH_KINDS)})")
    n, K = db.n, len(models)
    if K == 1:                         # a sweep's last batch of one: the model's own search
        return device_scores(dev, models[0], db, kind, host)
    if n == 0:
        return np.zeros(0, np.float32)
    seqs, whole = db.seqs, dev.whole_order()
    with host("prep"):
        tjbs = [m.byte.tjb(db.lengths).astype(np.int32) for m in models]   # per length class
    xe = dev.ssv_xe(models, seqs, None, on_device=whole)                    # [K][n]
    raw = dev.scratch("batch_raw", 4 * n)

    def finish_ssv(k: int) -> None:
        bp = models[k].byte
        dev.copy_bytes(raw, 0, xe, 4 * k * n, 4 * n)
        dev.finish("ssv", *whole, raw, tjbs[k], bp.bias, bp.base, bp.tbm, bp.tec, bp.scale)

    out = np.empty((K, n), np.float32)     # a device may reuse the array it hands out: copied
    if kind == "ssv":
        for k in range(K):
            finish_ssv(k)
            out[k] = dev.finished_scores()
        return out.ravel()
    redo = []                          # each model's recompute list: (device list, count, host)
    for k in range(K):
        finish_ssv(k)
        lst, count = dev.compact(*whole, 1, f"list_redo{k}")
        redo.append((lst, count, dev.download_ints(lst, count) if count else None))
    union = np.unique(np.concatenate([r[2] for r in redo if r[1]] or [np.zeros(0, np.int32)]))
    if union.size:
        tjbm = dev.scratch("batch_tjbm", K * n)
        for k, m in enumerate(models):
            one = dev.gather(((tjbs[k] + m.byte.tbm) & 0xFF).astype(np.uint8), "tjbm")
            dev.copy_bytes(tjbm, k * n, one, 0, n)
        with host("prep"):
            todo = launch_order(seqs, union)
        xj = dev.msv_xj(models, seqs, None, tjbm,
                        on_device=(dev.upload_list(todo), int(todo.size)))
    for k, m in enumerate(models):
        finish_ssv(k)                  # the scores buffer holds one model's at a time
        lst, count, _ = redo[k]
        if count:
            dev.copy_bytes(raw, 0, xj, 4 * k * n, 4 * n)
            dev.finish("msv", lst, count, raw, tjbs[k], 0, m.byte.base, 0, 0, m.byte.scale)
        out[k] = dev.finished_scores()
    return out.ravel()
