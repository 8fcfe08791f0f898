"""What a benchmark is asked to do (RunConfig), what each cell yields (RunRecord), and what it
reports while it works (Progress)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from ..backend import STAGES
from ..options import RunOptions

#: The backend whose results every other one is checked against.
REFERENCE_BACKEND = "numpy"
TIMING_KEYS = STAGES + ("total",)


@dataclass
class RunConfig:
    chunking: str = ""                   # one mode, or several comma-separated (an axis); "": each dataset's default
    in_flight: int = 1                    # launches outstanding at once (1: one call after the other)
    repeat: Optional[int] = None          # fixed number of timed passes (None: the criterion's)
    stopping: str = ""                    # the stopping criterion, NAME[:KEY=VALUE,...] ("": stable)
    max_time: float = 10.0                # seconds of timed passes per dataset x backend cell
    warmup_time: float = 0.0              # untimed passes after the checked one until this many
                                          # seconds have passed (hmmbench run: 0.2 s)
    min_repeats: int = 3
    max_repeats: int = 1000
    stable_spread: float = 0.02           # relative spread of the running median, last 3 passes
    tolerance: float = 1e-4               # absolute, on log10 likelihoods
    tolerance_fixed: bool = False         # True: overrides a dataset's own (profile: per kind)
    full_check_max_cells: int = 1_000_000_000  # above this, check a sample (the reference is slow)
    sample_pairs: int = 2000              # pairs checked per chunk when sampling
    reference: str = REFERENCE_BACKEND
    workload: str = "pairhmm"             # the registry the reference is looked up in
    cache_dir: Optional[Path] = None      # None: user cache dir; see cachedir.user_cache_dir
    use_cache: bool = True

    @classmethod
    def from_options(cls, opts: RunOptions, workload_defaults: dict,
                     sample_items: int = 2000) -> "RunConfig":
        """What ``hmmbench run``'s options ask of the runner, with a workload's own defaults
        (:meth:`hmmbench.workload.Workload.run_defaults`, its ``sample_items``)."""
        from .stopping import criterion_for
        cfg = cls(chunking=",".join(opts.chunking), in_flight=opts.in_flight,
                  repeat=opts.repeat, stopping=opts.stopping, max_time=opts.max_time,
                  warmup_time=opts.warmup_time,
                  tolerance=1e-4 if opts.tolerance is None else opts.tolerance,
                  tolerance_fixed=opts.tolerance is not None,
                  sample_pairs=opts.sample_pairs or sample_items,
                  use_cache=opts.use_cache, **workload_defaults)
        criterion_for(cfg)            # a bad --stopping is a usage error now, before any work
        return cfg


@dataclass
class RunRecord:
    """The summary of one dataset x backend cell (plain data; JSON-ready via :meth:`to_dict`)."""
    dataset: str
    dataset_sha256: str
    pairs: Optional[int]
    cells: Optional[int]
    backend: str
    api: str
    family: str
    precision: str
    device: str = ""
    params: dict = field(default_factory=dict)
    chunking: str = "original"
    in_flight: int = 1                    # launches the runner kept outstanding (--in-flight)
    launches: int = 0
    timing_s: dict = field(default_factory=dict)       # medians per stage and total
    timing_min_s: dict = field(default_factory=dict)
    timing_max_s: dict = field(default_factory=dict)
    samples_s: dict = field(default_factory=dict)      # every timed pass per stage and total
    gcups_kernel: Optional[float] = None
    gcups_total: Optional[float] = None
    speedup_vs_reference: Optional[float] = None
    speedup_basis: Optional[str] = None   # "measured" | "reference_s" (one cold reference pass)
    repeats: int = 0
    stopped_by: str = ""                  # what ended the timed passes: a stopping criterion's
                                          # name, or the bound reached (max_time, max_repeats)
    warmup_passes: int = 0                # untimed passes between the checked and the timed ones
    max_abs_err: Optional[float] = None   # inf when any checked value is NaN/inf
    n_checked: int = 0
    n_over_tol: int = 0
    n_nonfinite: int = 0
    n_past_range: int = 0                 # checked items past the number range, agreeing (-inf)
    tolerance: float = 1e-4
    max_abs_err_expected: Optional[float] = None  # vs the values stored in the dataset file, if any
    n_fallback: int = 0
    status: str = "error"
    reason: str = ""
    reference_s: Optional[float] = None   # time to compute the reference, when computed in this run
    info: dict = field(default_factory=dict)
    sampled: bool = False                 # the cross-check covered a sample of the items
    workload: str = "pairhmm"
    # profile axes (None for the pair-HMM): pairs = sequences, cells = model_length x residues
    model: Optional[str] = None
    model_length: Optional[int] = None
    kind: Optional[str] = None
    residues: Optional[int] = None
    # hmmbench.cluster (None in single-process runs): the workers a sharded run used; the Dask
    # worker and host of a fleet run's row
    workers: Optional[int] = None
    worker: Optional[str] = None
    host: Optional[str] = None

    def to_dict(self) -> dict:
        return asdict(self)


class Progress:
    """What the runner reports while it works; the default says nothing."""

    def start(self, n_cells: int) -> None: ...
    def begin(self, dataset: str, backend: str) -> None: ...
    def note(self, text: str) -> None: ...
    def repeat(self, n: int) -> None: ...
    def end(self, record: RunRecord) -> None: ...
    def stop(self) -> None: ...
