"""Backends of workload "profile" on the CPU: the NumPy reference and pyhmmer as peer.

``run(job)`` takes a :class:`hmmbench.profile.job.ProfileSearch` and returns an Execution whose
``log10`` field carries the scores in nats (``info["unit"] == "nats"``), one per sequence in the
job's order. The NumPy backend is the reference every other backend is checked against
(tolerances in ``hmmbench.profile.job.TOLERANCE``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from hmmbench.backend import Backend, Execution, StageClock
from hmmbench.profile.job import refuse_kind


class ProfileBackend(Backend):
    workload = "profile"
    kinds: tuple = ()

    def refuse_reason(self, job) -> Optional[str]:
        return refuse_kind(self.name, self.kinds, job)


class NumpyProfile(ProfileBackend):
    name = "profile-numpy"
    api = "numpy"
    family = "reference"
    precision = "int8/int16 exact; float64"
    kinds = ("ssv", "msv", "vf", "viterbi", "forward")

    def run(self, job) -> Execution:
        from cpu_reference import profile_filters as pf
        from cpu_reference import profile_generic as pg
        fn = {"ssv": pf.ssv_filter, "msv": pf.msv_filter, "vf": pf.viterbi_filter,
              "viterbi": pg.generic_viterbi, "forward": pg.generic_forward}[job.kind]
        clock = StageClock()
        with clock("kernel"):
            out = np.asarray(fn(job.model, job.seqs), dtype=np.float64)
        return Execution(log10=out, timing=clock.timing, info={"unit": "nats"})


class PyhmmerPeer(ProfileBackend):
    """HMMER 3.4's own SIMD filters through pyhmmer, one call per sequence (CPU peer row)."""
    name = "profile-pyhmmer"
    api = "pyhmmer"
    family = "peer"
    precision = "int8 SIMD"
    kinds = ("ssv", "msv")

    def unavailable_reason(self) -> Optional[str]:
        try:
            import pyhmmer  # noqa: F401
        except ImportError:
            return "pyhmmer not installed"
        return None

    def refuse_reason(self, job) -> Optional[str]:
        return super().refuse_reason(job) or (None if job.hmm is not None
                                              else "the job carries no pyhmmer HMM")

    def run(self, job) -> Execution:
        import pyhmmer
        clock = StageClock()
        with clock("prep"):
            hmm = job.hmm
            gm = pyhmmer.plan7.Profile(hmm.M, hmm.alphabet)
            gm.configure(hmm, pyhmmer.plan7.Background(hmm.alphabet), L=400)
            om = gm.to_optimized()
            block = job.seqs.to_pyhmmer()
        out = np.empty(len(block), dtype=np.float64)
        fn = om.ssv_filter if job.kind == "ssv" else om.msv_filter
        with clock("kernel"):
            for i, seq in enumerate(block):
                om.L = len(seq)                  # length model per target, as the pipeline
                out[i] = fn(seq)
        return Execution(log10=out, timing=clock.timing, info={"unit": "nats"})


def backends() -> list:
    return [NumpyProfile(), PyhmmerPeer()]
