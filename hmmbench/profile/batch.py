"""Several small models in one SSV / MSV launch (issue 14, ``--batch-models K``): a sweep's
models grouped into batches, the reference's way of running a batch (model by model), and a
batch's search on a device's resident database.

Why: the warp-group kernels pay per database row a cost that does not depend on M (residue
fetch and shuffle, loop, reductions), so small models run well below the large ones' GCUPS; a
kernel built with ``MODELS = K`` (kernels_common/profile/warp.h) reads each residue once for K
models' DP rows. Each model's raw integers are identical to its own launch's
(tests/test_profile_batch.py), so the scores are too.

A batch's device search (:func:`batch_scores`, the protocol of
:mod:`hmmbench.profile.device_pipeline` plus ``copy_bytes``, ``scratch``, ``upload_list``,
``download_ints``): one SSV launch of the K models over the resident launch order, each model's
xE finished on the device as a single model's is; kind ``msv``: the sequences that some model's
SSV cannot decide (the union of the models' recompute lists, small) go through one full-MSV
launch of the K models, and each model's recomputes are finished from its part of that output.
"""
from __future__ import annotations

import numpy as np

from ..backend import Execution
from .host import launch_order
from .job import ProfileBatch
from .warp import BATCH_KINDS


def group_models(specs: list, k: int) -> list:
    """The sweep's models sorted by length (stable), in consecutive groups of ``k``: a batch
    holds models of similar M (its kernel's vectors are its largest model's)."""
    ranked = sorted(specs, key=lambda s: s.M)
    return [ranked[i:i + k] for i in range(0, len(ranked), k)]


def batch_label(group: list, first: int) -> str:
    """The record's model name of a batch: the models' common file stem (``RREFam``) or
    ``batch``, and their 1-based positions in the length-sorted sweep: ``RREFam[1-4]``
    (``RREFam[9]``: a batch of one)."""
    stems = {s.name.split("/")[0] if "/" in s.name else None for s in group}
    stem = stems.pop() if len(stems) == 1 and None not in stems else "batch"
    last = first + len(group)
    return f"{stem}[{first + 1}-{last}]" if len(group) > 1 else f"{stem}[{last}]"


def run_parts(run, batch: ProfileBatch) -> Execution:
    """A batch run model by model with ``run`` (the reference): the results joined model-major,
    the stages summed."""
    outs = [run(p) for p in batch.parts]
    timing: dict = {}
    for ex in outs:
        for stage, s in ex.timing.items():
            timing[stage] = timing.get(stage, 0.0) + s
    info = {**(outs[0].info if outs else {}), **batch_info(batch), "batch_launches": "per model"}
    return Execution(log10=np.concatenate([np.asarray(ex.log10, np.float64) for ex in outs]),
                     timing=timing, info=info)


def batch_info(batch: ProfileBatch) -> dict:
    """What a batched cell's record says of its models (info)."""
    return {"batch_models": list(batch.names), "batch_size": batch.size,
            "batch_lengths": [int(m.M) for m in batch.models], "batch_launches": "one"}


def batch_scores(dev, models: list, db, kind: str, host) -> np.ndarray:
    """Scores of ``kind`` (ssv or msv) of every model against the resident database ``db``,
    model-major (float32 nats, as :func:`.device_pipeline.device_scores` gives for each model
    alone)."""
    if kind not in BATCH_KINDS:
        raise ValueError(f"kind {kind!r} does not batch (only {', '.join(BATCH_KINDS)})")
    n, K = db.n, len(models)
    if K == 1:                         # a sweep's last batch of one: the model's own search
        from .device_pipeline import device_scores
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

    if kind == "ssv":
        out = []
        for k in range(K):
            finish_ssv(k)
            out.append(dev.finished_scores())
        return np.concatenate(out)
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
    out = []
    for k, m in enumerate(models):
        finish_ssv(k)                  # the scores buffer holds one model's at a time
        lst, count, _ = redo[k]
        if count:
            dev.copy_bytes(raw, 0, xj, 4 * k * n, 4 * n)
            dev.finish("msv", lst, count, raw, tjbs[k], 0, m.byte.base, 0, 0, m.byte.scale)
        out.append(dev.finished_scores())
    return np.concatenate(out)


def parse_batch_models(value) -> int:
    """--batch-models: a positive integer (None: 1, one model per cell)."""
    from ..errors import UserError
    if value is None:
        return DEFAULT_BATCH_MODELS
    try:
        k = int(str(value).strip())
    except ValueError:
        k = 0
    if k < 1:
        raise UserError(f"--batch-models: expected a positive integer, got '{value}'")
    return k


def check_batch_kinds(k: int, kinds: list, explicit: bool) -> list:
    """The kinds of a run with --batch-models ``k``: without --kind the kinds that batch; given
    kinds that cannot batch are a usage error (one line)."""
    from ..errors import UserError
    if k == 1:
        return kinds
    if not explicit:
        return list(BATCH_KINDS)
    other = [x for x in kinds if x not in BATCH_KINDS]
    if other:
        raise UserError(f"--batch-models {k}: kind {', '.join(other)} runs one model per "
                        f"launch; batching takes --kind {','.join(BATCH_KINDS)} (run the "
                        "other kinds without --batch-models)")
    return kinds



#: --batch-models' default: one model per cell. On the H100 a launch of K RREFam models is
#: slower than K launches (kernel 0.79x at K = 2, 0.69x at K = 8: registers; docs/profile-design.md,
#: git show 8903acf:scripts/profile_batch_models.py); on a CPU's OpenCL it is faster (1.16-1.23x at K = 4)
DEFAULT_BATCH_MODELS = 1
