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
from . import pipeline as pl
from .batch import run_parts
from .job import ProfileBackend, ProfileBatch, pipeline_refusal


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

    def run(self, job) -> Execution:
        if isinstance(job, ProfileBatch):
            return run_parts(self.run, job)
        clock = StageClock()
        info = {"unit": "nats"}
        with clock("kernel"):
            if job.kind == "pipeline":
                counts, stage, fwd = pl.run_stages(job.model, job.seqs)
                out = pl.outcome(stage, fwd)
                info["pass_counts"] = counts.as_dict()
            else:
                fn = {"ssv": pf.ssv_filter, "msv": pf.msv_filter, "vf": pf.viterbi_filter,
                      "viterbi": pg.generic_viterbi, "forward": pg.generic_forward,
                      "gmsv": pg.generic_msv}[job.kind]
                out = np.asarray(fn(job.model, job.seqs), dtype=np.float64)
        return Execution(log10=out, timing=clock.timing, info=info)


def backends() -> list:
    return [NumpyProfile()]
