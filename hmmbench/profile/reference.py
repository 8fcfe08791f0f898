"""The NumPy reference backend of workload "profile": ``profile-numpy``, the HMMER3-exact
references of :mod:`cpu_reference.profile` behind the Backend interface.

``run(job)`` takes a :class:`hmmbench.profile.job.ProfileSearch` and returns an Execution whose
``log10`` field carries the scores in nats (``info["unit"] == "nats"``), one per sequence in the
job's order. It is the reference every other backend is checked against (tolerances in
``hmmbench.profile.job.TOLERANCE``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from cpu_reference.profile import filters as pf
from cpu_reference.profile import generic as pg

from ..backend import Execution, StageClock
from ..memory import MemoryNeed
from . import pipeline as pl
from .batch import run_parts
from .job import ProfileBackend, ProfileBatch, pipeline_refusal
from .reference_memory import SURVIVOR_STAGES, most_batch_need, slice_need

#: per sequence (results, order, lengths) and once per call (model tables, Python)
PER_SEQUENCE, FIXED = 64, 1 << 16


class NumpyProfile(ProfileBackend):
    """The reference of every kind; ``pipeline``: HMMER's pipeline on the references
    (hmmbench.profile.pipeline.run_stages), one outcome per sequence (stage reached, Forward
    nats) that the device pipelines are checked against."""
    name = "profile-numpy"
    api = "numpy"
    family = "reference"
    precision = "int8/int16 exact; float64"
    kinds = ("ssv", "msv", "vf", "viterbi", "forward", "gmsv", "pipeline")
    batches = True                  # model by model: the check of the batched cells

    def refuse_reason(self, job) -> Optional[str]:
        return super().refuse_reason(job) or pipeline_refusal(job)

    def memory_need(self, shape) -> MemoryNeed:
        """The most one batch holds -- its padded code matrix being built, or its DP rows
        being filled (:mod:`hmmbench.profile.reference_memory`) -- plus the per-sequence
        results; a batched cell runs its models one after another. The pipeline: its MSV
        filter's batches over every sequence, the slices of survivors of its later stages no
        more (:func:`hmmbench.profile.pipeline.in_slices`) unless one sequence alone needs
        more."""
        batch = most_batch_need(shape, "msv" if shape.kind == "pipeline" else shape.kind)
        if shape.kind == "pipeline":
            L = shape.max_length
            batch = max([batch] + [slice_need(1, L, L, shape.M, stage)
                                   for stage in SURVIVOR_STAGES])
        return MemoryNeed(host=batch + PER_SEQUENCE * shape.sequences + FIXED)

    def run(self, job) -> Execution:
        if isinstance(job, ProfileBatch):
            return run_parts(self.run, job)
        clock = StageClock()
        info = {"unit": "nats"}
        with clock("kernel"):
            if job.kind == "pipeline":
                counts, stage, fwd = pl.run_stages(job.model, job.seqs,
                                                   bias_filter=job.bias_filter)
                out = pl.outcome(stage, fwd)
                info["pass_counts"] = counts.as_dict()
                info["bias_filter"] = job.bias_filter
            else:
                fn = {"ssv": pf.ssv_filter, "msv": pf.msv_filter, "vf": pf.viterbi_filter,
                      "viterbi": pg.generic_viterbi, "forward": pg.generic_forward,
                      "gmsv": pg.generic_msv}[job.kind]
                out = np.asarray(fn(job.model, job.seqs), dtype=np.float64)
        return Execution(log10=out, timing=clock.timing, info=info)


def backends() -> list:
    return [NumpyProfile()]
