"""The unit of work of workload "profile": one model x a sequence database x one score kind."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .model import ProfileModel, SequenceSet

#: score kinds, HMMER's names: SIMD filters (exact integer arithmetic) and generic float DP
SCORE_KINDS = ("ssv", "msv", "vf", "viterbi", "forward")
#: what the reference cross-check must meet per kind (absolute nats; 0 = identical)
TOLERANCE = {"ssv": 0.0, "msv": 0.0, "vf": 0.0, "viterbi": 1e-3, "forward": 1e-2}


@dataclass
class ProfileSearch:
    """Scores of ``kind`` for every sequence of ``seqs`` against ``model`` (nats, float)."""
    model: ProfileModel
    seqs: SequenceSet
    kind: str
    hmm: Optional[object] = None          # the pyhmmer HMM (peers: pyhmmer's own filters)

    def __post_init__(self):
        if self.kind not in SCORE_KINDS:
            raise ValueError(f"unknown score kind {self.kind!r} (one of {', '.join(SCORE_KINDS)})")

    @property
    def n_items(self) -> int:
        return len(self.seqs)

    @property
    def cells(self) -> int:
        """DP cells: model positions x residues (the GCUPS denominator)."""
        return self.model.M * self.seqs.n_residues


def refuse_kind(name: str, kinds, job) -> Optional[str]:
    """Shared ``refuse_reason`` of the profile backends: the job must be a ProfileSearch (the
    pair-HMM runner hands them PairSets until the runner learns workloads) of a kind they do."""
    if not isinstance(job, ProfileSearch):
        return (f"{name} takes profile searches (hmmbench.profile.job.ProfileSearch), "
                f"not {type(job).__name__}; the runner's profile integration is pending")
    if job.kind not in kinds:
        return f"{name} does not compute '{job.kind}' (it does: {', '.join(kinds)})"
    return None
