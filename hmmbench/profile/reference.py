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
#: a batch's padded code matrix being built (SequenceSet.padded): bytes per residue of the batch
#: (int64 row and column indexes, the two int64 source-index temporaries, the codes gathered)
#: and per padded cell (the uint8 matrix) -- measured: 32.1 per residue on proteins-20000's one
#: batch of 54 sequences padded to 974 (20,048 residues, 52,596 cells, traced peak 695,407 B);
#: 25.0 on proteins-200000's (NumPy reuses temporaries in place past 256 KiB)
PADDED_RESIDUE_BYTES, PADDED_CELL_BYTES = 33, 1
#: bytes per DP cell of a batch (its rows and their temporaries), by kind -- measured on
#: proteins-20000 and -200000 at M = 400 and 1500 (traced peak less the padded codes, per
#: sequence and fixed parts): ssv/msv 8.6, vf 34.3 (double-buffered rows), gmsv 27.8,
#: viterbi 81.6, forward 72.9; the pipeline's Forward on its survivors 65.8 (query-M400; as
#: every sequence may survive, its estimate is a bound: 3.1x the peak on proteins-200000)
DP_BYTES = {"ssv": 10, "msv": 10, "vf": 36, "gmsv": 30, "viterbi": 88, "forward": 80,
            "pipeline": 80}
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
        being filled -- plus the per-sequence results; a batched cell runs its models one after
        another. The pipeline: its filters' batches over every sequence, its Forward's over
        every sequence too (survivors are not known before the run) and their copy (at most
        the database)."""
        if shape.kind == "pipeline":
            batch = max(_batch_need(shape, FILTER_BATCH_CELLS, DP_BYTES["vf"]),
                        _batch_need(shape, GENERIC_BATCH_CELLS, DP_BYTES["pipeline"]))
            batch += shape.nbytes
        else:
            generic = shape.kind in ("viterbi", "forward", "gmsv")
            batch = _batch_need(shape, GENERIC_BATCH_CELLS if generic else FILTER_BATCH_CELLS,
                                DP_BYTES.get(shape.kind, max(DP_BYTES.values())))
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


def _batch_need(shape, cells: int, dp_bytes: int) -> int:
    """The most a batch of about ``cells`` DP cells holds: building its padded codes, or its
    DP rows beside the codes -- over the batches that may hold the most."""
    per = max(1, cells // max(1, shape.M))
    return max((max(PADDED_RESIDUE_BYTES * residues + PADDED_CELL_BYTES * padded,
                    PADDED_CELL_BYTES * padded + n * shape.M * dp_bytes)
                for n, residues, padded in shape.batches(per)), default=0)


def backends() -> list:
    return [NumpyProfile()]
