"""The unit of work of workload "profile": one model x a sequence database x one score kind."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..backend import Backend
from .datasets import is_calibrated
from .model import ProfileModel, SequenceSet

#: score kinds, HMMER's names: SIMD filters (exact integer arithmetic) and generic float DP
#: (``gmsv`` = p7_GMSV, the generic float MSV)
SCORE_KINDS = ("ssv", "msv", "vf", "viterbi", "forward", "gmsv")
#: what the reference cross-check must meet per kind (absolute nats; 0 = identical). gmsv:
#: HMMER computes it in float32; the float64 reference is <= 6.0e-4 nats off p7_GMSV on every
#: shipped model x the whole proteome (L <= 4,560), the float32 rounding of the N/C ``+ tloop``
#: chains growing with L (docs/profile-design.md; past L = 10,000 HMMER's own drift reaches a few 1e-3)
TOLERANCE = {"ssv": 0.0, "msv": 0.0, "vf": 0.0, "viterbi": 1e-3, "forward": 1e-2, "gmsv": 1e-3,
             "pipeline": 1e-2}
#: the whole HMMER pipeline (MSV -> bias filter -> Viterbi -> Forward, hmmsearch's defaults;
#: ProfileSearch.bias_filter=False: without the bias filter, as --nobias): the device pipelines
#: and the NumPy reference give one outcome per sequence (hmmbench.profile.pipeline.outcome:
#: stage reached x 1e6 + Forward nats, cross-checked within the Forward tolerance, so a
#: different stage is a mismatch); the CPU peers (pyhmmer's Pipeline, the hmmsearch binary)
#: are timed only
PIPELINE = "pipeline"
JOB_KINDS = SCORE_KINDS + (PIPELINE,)
#: DP cells the NumPy reference checks in full per job; above, a deterministic sample of
#: sequences of about this many cells (reference speed on one core: ~1 GCUPS SSV/MSV,
#: ~0.1 VF, ~0.06 generic Viterbi, ~0.006 Forward, ~0.5 generic MSV: about 2-5 s per check)
REFERENCE_CHECK_CELLS = {"ssv": 2_000_000_000, "msv": 2_000_000_000, "vf": 500_000_000,
                         "viterbi": 200_000_000, "forward": 30_000_000, "gmsv": 1_000_000_000,
                         "pipeline": 1_000_000_000}


@dataclass
class ProfileSearch:
    """Scores of ``kind`` for every sequence of ``seqs`` against ``model`` (nats, float)."""
    model: ProfileModel
    seqs: SequenceSet
    kind: str
    hmm: Optional[object] = None          # the pyhmmer HMM (peers: pyhmmer's own filters)
    #: the database's sha256 when ``seqs`` is a whole database of the run: device backends keep
    #: it resident under this key across models and kinds (None: a one-off set, loaded per run)
    database: Optional[str] = None
    #: kind ``pipeline``: HMMER's biased-composition filter after MSV (hmmsearch's default;
    #: False as ``--nobias``)
    bias_filter: bool = True
    #: no expected values come with a search (the runner's check reads this of every work unit)
    expected = None

    def __post_init__(self):
        if self.kind not in JOB_KINDS:
            raise ValueError(f"unknown score kind {self.kind!r} (one of {', '.join(SCORE_KINDS)})")

    def subset(self, idx) -> "ProfileSearch":
        """The same search on the sequences ``idx`` (in that order): sampled cross-checks. A
        subset is no longer the resident database."""
        return ProfileSearch(self.model, self.seqs.subset(idx), self.kind, self.hmm,
                             bias_filter=self.bias_filter)

    @property
    def n_items(self) -> int:
        return len(self.seqs)

    @property
    def cells(self) -> int:
        """DP cells: model positions x residues (the GCUPS denominator)."""
        return self.model.M * self.seqs.n_residues


@dataclass
class ProfileBatch:
    """The searches of several models (one kind, one sequence set) as one unit of work
    (``--batch-models``): the warp kernels run them in one launch per kernel (warp.h's MODELS).
    Results are model-major: every sequence of the first model, then the second's, ..."""
    parts: list                            # a ProfileSearch per model
    names: tuple = ()                      # the models' names (the record's info)
    #: as ProfileSearch.database: the resident database's key (None: a one-off set)
    database: Optional[str] = None
    #: the models per batch the sweep asked for (a sweep's last batch may hold fewer)
    size: int = 0
    expected = None

    def __post_init__(self):
        if len({p.kind for p in self.parts}) != 1:
            raise ValueError("the searches of a batch share one kind")
        self.size = self.size or len(self.parts)

    @property
    def kind(self) -> str:
        return self.parts[0].kind

    @property
    def models(self) -> list:
        return [p.model for p in self.parts]

    @property
    def seqs(self) -> SequenceSet:
        """The sequence set every model runs against (a sampled subset has none)."""
        seqs = self.parts[0].seqs
        if any(p.seqs is not seqs for p in self.parts):
            raise ValueError("the searches of this batch run on different sequence sets")
        return seqs

    @property
    def n_items(self) -> int:
        return sum(p.n_items for p in self.parts)

    @property
    def cells(self) -> int:
        """DP cells summed over the models: the GCUPS of a batch are aggregate."""
        return sum(p.cells for p in self.parts)

    def subset(self, idx) -> "ProfileBatch":
        """The results ``idx`` (model-major indexes, in model order: a sampled check's sorted
        sample) as a batch of each model's subset."""
        idx = np.asarray(idx, np.int64)
        bounds = np.cumsum([0] + [p.n_items for p in self.parts])
        which = np.searchsorted(bounds, idx, side="right") - 1
        if (np.diff(which) < 0).any():
            raise ValueError("a batch's subset takes its indexes in model order")
        return ProfileBatch([p.subset(idx[which == k] - bounds[k])
                             for k, p in enumerate(self.parts)], self.names, size=self.size)


def refuse_kind(name: str, kinds, job, batches: bool = False) -> Optional[str]:
    """Shared ``refuse_reason`` of the profile backends: the job must be a ProfileSearch (the
    pair-HMM runner hands them PairSets until the runner learns workloads) of a kind they do,
    or a ProfileBatch where the backend takes them (``batches``)."""
    if isinstance(job, ProfileBatch):
        if not batches:
            return (f"{name} runs one model per launch: batched cells (--batch-models) run on "
                    "the warp kernels (profile-cuda-warp, profile-cuda-cudampf, "
                    "profile-opencl-warp)")
        return None if job.kind in kinds else \
            f"{name} does not compute '{job.kind}' (it does: {', '.join(kinds)})"
    if not isinstance(job, ProfileSearch):
        return (f"{name} takes profile searches (hmmbench.profile.job.ProfileSearch), "
                f"not {type(job).__name__}; the runner's profile integration is pending")
    if job.kind not in kinds:
        return f"{name} does not compute '{job.kind}' (it does: {', '.join(kinds)})"
    return None


def pipeline_refusal(job) -> Optional[str]:
    """Why a ``pipeline`` job cannot run (its P-value thresholds need the HMM's calibration)."""
    if job.kind != PIPELINE:
        return None
    if job.hmm is None:
        return "the job carries no pyhmmer HMM (the pipeline needs its E-value calibration)"
    if not is_calibrated(job.hmm):
        return ("the model has no E-value calibration (a sampled random-M model): the "
                "pipeline's P-value thresholds are undefined (query-M models are calibrated)")
    return None


class ProfileBackend(Backend):
    """Base of the CPU backends of workload "profile" (the NumPy reference and the HMMER peers):
    the kinds it computes and whether it takes batches of models."""
    workload = "profile"
    kinds: tuple = ()
    #: takes a batch of models (ProfileBatch, --batch-models)
    batches = False

    def refuse_reason(self, job) -> Optional[str]:
        return refuse_kind(self.name, self.kinds, job, self.batches)
