"""Several small models in one SSV / MSV launch (``--batch-models K``): a sweep's models grouped
into batches, the reference's way of running a batch (model by model), and the option's checks.
A batch's search on a device's resident database is :mod:`hmmbench.profile.device.batch`.

Why: the warp-group kernels pay per database row a cost that does not depend on M (residue
fetch and shuffle, loop, reductions), so small models run well below the large ones' GCUPS; a
kernel built with ``MODELS = K`` (kernels_common/profile/warp.h) reads each residue once for K
models' DP rows. Each model's raw integers are identical to its own launch's
(tests/profile/test_batch.py), so the scores are too.
"""
from __future__ import annotations

import numpy as np

from ..backend import Execution
from ..errors import UserError
from .job import ProfileBatch

#: score kinds whose kernels take several models per launch (kernels_common/profile/warp.h's MODELS)
BATCH_KINDS = ("ssv", "msv")


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


def parse_batch_models(value) -> int:
    """--batch-models: a positive integer (None: 1, one model per cell)."""
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
