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

#: sequences of about this many DP cells (sequences x model positions) form one batch of the
#: references: the int filters' and the float64 generic ones' (cpu_reference.profile)
FILTER_BATCH_CELLS, GENERIC_BATCH_CELLS = pf.BATCH_CELLS, 1 << 19
#: bytes per padded residue of a batch while its code matrix is built (the codes, and int64
#: row, column and source indexes per residue; SequenceSet.padded) -- measured: 5.7 at most on
#: the batches of proteins-200000 (traced peak of SequenceSet.padded per padded cell)
PADDED_BYTES = 6
#: bytes per DP cell of a batch (its rows and their temporaries), by kind -- measured
DP_BYTES = {"ssv": 10, "msv": 10, "vf": 56, "gmsv": 28, "viterbi": 104, "forward": 104,
            "pipeline": 104}
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
        """The larger of a batch's two phases -- its padded code matrix being built, its DP
        rows being filled -- for the batch that pads to the most residues, plus the
        per-sequence results; a batched cell runs its models one after another."""
        generic = shape.kind in ("viterbi", "forward", "gmsv", "pipeline")
        per_batch = (GENERIC_BATCH_CELLS if generic else FILTER_BATCH_CELLS) // max(1, shape.M)
        n = min(shape.sequences, max(1, per_batch))
        padded = shape.padded_batch(n)
        dp = padded + n * shape.M * DP_BYTES.get(shape.kind, max(DP_BYTES.values()))
        host = max(PADDED_BYTES * padded, dp) + PER_SEQUENCE * shape.sequences + FIXED
        return MemoryNeed(host=host)

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
