"""Measuring: every dataset x backend cell of a benchmark, repeated until stable, cross-checked.

Like nvbench, measuring is kept apart from printing: :func:`run_benchmark` returns plain data
(:class:`RunRecord` objects); :mod:`hmmbench.report` renders them and :mod:`hmmbench.results`
stores them.

Axes: dataset x chunking mode (how the pairs are cut into launches) x backend.

One *pass* runs the backend over every launch of the dataset once. The first pass is an untimed
warm-up whose results are cross-checked against the float64 reference (the ``numpy`` backend,
cached on disk per dataset); then timed passes repeat until the running median of the total time
is stable, or the time cap is reached (at least ``min_repeats`` passes unless one pass alone
exceeds the cap). Stage times (prep/h2d/kernel/d2h) are the backend's own, summed over launches;
``total`` is the wall time around the backend calls of a pass.

Lazy datasets (generated chunk by chunk, too large for memory) are regenerated for every pass;
the chunking mode applies within each generated chunk, generation time is not counted, and the
cross-check covers a deterministic sample of ``sample_pairs`` pairs per chunk (``n_checked`` says
how many). Datasets above ``full_check_max_cells`` are likewise checked on a sample, because the
float64 CPU reference is slow.

Workloads: the unit of work a backend runs is the dataset's load() (a PairSet for "pairhmm"; a
:class:`hmmbench.profile.job.ProfileSearch` for "profile", whose "datasets" are the
database x model x kind cells built by :func:`hmmbench.profile.datasets.profile_cells`). A
dataset may carry runner hints as attributes: ``axes`` (extra record fields), ``tolerance``,
``check_cells`` (a reference cell budget: above it the check is sampled), ``nonfinite_equal``
(NaN == NaN and inf == inf count as agreement, as HMMER's filters report them) and
``loading_note()`` (a progress line before a slow load). Backends with ``scores = False``
(whole-pipeline peers) are timed but never checked: their status is ``peer``.
"""
from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

import numpy as np

from .backend import STAGES, Backend
from .datasets.base import Dataset
from .fileio import atomic_open
from .model import PairSet
from .registry import probe

#: The backend whose results every other one is checked against.
REFERENCE_BACKEND = "numpy"
#: Bump when the cache file layout (not the reference's maths) changes.
CACHE_FORMAT = 1
TIMING_KEYS = STAGES + ("total",)


@dataclass
class RunConfig:
    chunking: str = ""                   # one mode, or several comma-separated (an axis); "": each dataset's default
    repeat: Optional[int] = None          # fixed number of timed passes (None: until stable)
    max_time: float = 10.0                # seconds of timed passes per dataset x backend cell
    min_repeats: int = 3
    max_repeats: int = 1000
    stable_spread: float = 0.02           # relative spread of the running median, last 3 passes
    tolerance: float = 1e-4               # absolute, on log10 likelihoods
    tolerance_fixed: bool = False         # True: overrides a dataset's own (profile: per kind)
    full_check_max_cells: int = 1_000_000_000  # above this, check a sample (the reference is slow)
    sample_pairs: int = 2000              # pairs checked per chunk when sampling
    reference: str = REFERENCE_BACKEND
    workload: str = "pairhmm"             # the registry the reference is looked up in
    cache_dir: Optional[Path] = None      # None: user cache dir; see hostinfo.user_cache_dir
    use_cache: bool = True


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
    launches: int = 0
    timing_s: dict = field(default_factory=dict)       # medians per stage and total
    timing_min_s: dict = field(default_factory=dict)
    timing_max_s: dict = field(default_factory=dict)
    gcups_kernel: Optional[float] = None
    gcups_total: Optional[float] = None
    speedup_vs_reference: Optional[float] = None
    speedup_basis: Optional[str] = None   # "measured" | "reference_s" (one cold reference pass)
    repeats: int = 0
    max_abs_err: Optional[float] = None   # inf when any checked value is NaN/inf
    n_checked: int = 0
    n_over_tol: int = 0
    n_nonfinite: int = 0
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


# --- work units: a PairSet (pairhmm) or a ProfileSearch (profile) ---------------------------

def n_items(unit) -> int:
    """Pairs of a PairSet, sequences of a profile search: one result value each."""
    return unit.n_pairs if isinstance(unit, PairSet) else unit.n_items


def subset_items(unit, idx: np.ndarray):
    return unit.subset_pairs(idx) if isinstance(unit, PairSet) else unit.subset(idx)


# --- reference ------------------------------------------------------------------------------

def sample_indexes(n_pairs: int, k: int, seed: int) -> np.ndarray:
    """A deterministic sorted sample of k pair indexes (all of them when n <= k)."""
    if n_pairs <= k:
        return np.arange(n_pairs, dtype=np.int64)
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.sort(rng.choice(n_pairs, size=k, replace=False)).astype(np.int64)


def _source_digest(backend: Backend) -> str:
    """Hash of the reference backend's package sources: editing the reference invalidates caches."""
    import importlib
    modname = type(backend).__module__
    top = modname.split(".")[0]
    h = hashlib.sha256(f"{CACHE_FORMAT}:{modname}:{type(backend).__qualname__}".encode())
    try:
        from .hostinfo import package_files
        files = package_files(top)
        pkg = importlib.import_module(top)
        if not files and getattr(pkg, "__file__", None):
            files = [Path(pkg.__file__)]
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    except Exception:  # noqa: BLE001 - no sources: fall back to the class identity only
        pass
    h.update(str(getattr(backend, "version", "")).encode())
    return h.hexdigest()[:16]


def _atomic_save_npy(path: Path, values: np.ndarray, meta: dict) -> None:
    with atomic_open(path, binary=True) as fh:
        np.save(fh, values)
    with atomic_open(path.with_suffix(".json")) as fh:
        fh.write(json.dumps(meta))


class ReferenceStore:
    """Float64 reference results per dataset (whole set, or deterministic samples), disk-cached."""

    def __init__(self, backend: Optional[Backend], reason: Optional[str], cfg: RunConfig):
        self.backend, self.reason, self.cfg = backend, reason, cfg
        if cfg.use_cache:
            from .hostinfo import user_cache_dir
            self.dir = Path(cfg.cache_dir) if cfg.cache_dir else user_cache_dir() / "reference"
        else:
            self.dir = None
        self._key = _source_digest(backend) if backend is not None else ""
        self._memory: dict = {}

    @classmethod
    def for_config(cls, cfg: RunConfig) -> "ReferenceStore":
        from .errors import UserError
        from .registry import select
        try:
            backend = select([cfg.reference], cfg.workload)[0]
        except UserError as exc:
            return cls(None, str(exc), cfg)
        reason = probe(backend).reason
        return cls(None if reason else backend, reason, cfg)

    @property
    def available(self) -> bool:
        return self.backend is not None

    def _path(self, sha: str, what: str) -> Optional[Path]:
        if self.dir is None:
            return None
        return self.dir / f"{sha[:32]}-{self._key}-{what}.npy"

    def lookup(self, sha: str, what: str) -> Optional[tuple]:
        """(values, seconds or None) from memory or disk, else None."""
        if (sha, what) in self._memory:
            return self._memory[(sha, what)]
        path = self._path(sha, what)
        if path is not None and path.exists():
            try:
                values = np.load(path)
                meta = json.loads(path.with_suffix(".json").read_text())
                self._memory[(sha, what)] = (values, meta.get("seconds"))
                return self._memory[(sha, what)]
            except (OSError, ValueError):
                pass  # a damaged cache entry is recomputed
        return None

    def store(self, sha: str, what: str, values: np.ndarray, seconds: float) -> None:
        values = np.asarray(values, dtype=np.float64)
        self._memory[(sha, what)] = (values, seconds)
        path = self._path(sha, what)
        if path is not None:
            from .hostinfo import cpu_model
            try:
                _atomic_save_npy(path, values, {"seconds": seconds, "cpu": cpu_model(),
                                                "backend": self.backend.name})
            except OSError:
                pass  # an unwritable cache only costs time

    def compute(self, sha: str, what: str, pairs: PairSet, force: bool = False) -> tuple:
        """(values, seconds, computed_now)."""
        hit = None if force else self.lookup(sha, what)
        if hit is not None and len(hit[0]) == n_items(pairs):
            return hit[0], hit[1], False
        t0 = time.perf_counter()
        values = np.asarray(self.backend.run(pairs).log10, dtype=np.float64)
        seconds = time.perf_counter() - t0
        if len(values) != n_items(pairs):
            raise RuntimeError(f"reference returned {len(values)} values for {n_items(pairs)} "
                               "items")
        self.store(sha, what, values, seconds)
        return values, seconds, True


# --- checking -------------------------------------------------------------------------------

@dataclass
class CheckTally:
    tolerance: float
    n_checked: int = 0
    n_over_tol: int = 0
    n_nonfinite: int = 0                  # non-finite values that do not agree with the reference
    max_abs_err: float = 0.0
    max_abs_err_expected: Optional[float] = None
    #: NaN == NaN and inf == inf (same sign) agree: HMMER's filters report "recompute" and
    #: overflow that way. Otherwise (pair-HMM) any non-finite value is a mismatch.
    nonfinite_equal: bool = False

    def add(self, got: np.ndarray, ref: np.ndarray, expected: Optional[np.ndarray] = None):
        got = np.asarray(got, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        bad = ~np.isfinite(got) | ~np.isfinite(ref)
        if self.nonfinite_equal:
            same = (np.isnan(got) & np.isnan(ref)) | (np.isinf(got) & (got == ref))
            bad &= ~same
            got = np.where(same, 0.0, got)
            ref = np.where(same, 0.0, ref)
        with np.errstate(invalid="ignore"):           # inf - inf: already counted as bad
            err = np.abs(got - ref)
        self.n_checked += len(got)
        self.n_nonfinite += int(bad.sum())
        self.n_over_tol += int(bad.sum()) + int((err[~bad] > self.tolerance).sum())
        if bad.any():
            self.max_abs_err = math.inf
        elif len(err):
            self.max_abs_err = max(self.max_abs_err, float(err.max()))
        if expected is not None and len(expected):
            e = np.abs(got - expected)
            m = float(e.max()) if np.isfinite(e).all() else math.inf
            self.max_abs_err_expected = max(self.max_abs_err_expected or 0.0, m)


# --- passes ---------------------------------------------------------------------------------

@dataclass
class Pass:
    timing: dict
    n_fallback: int
    infos: list
    n_launches: int


def _default_launches(pairs: PairSet, mode: str) -> list:
    from .datasets.chunking import launches
    return launches(pairs, mode)


class _CellRunner:
    """Runs one backend on one dataset: warm-up + check, then timed passes."""

    def __init__(self, dataset: Dataset, backend: Backend, cfg: RunConfig,
                 refs: ReferenceStore, launches_fn: Callable, progress: Progress):
        self.ds, self.b, self.cfg, self.refs = dataset, backend, cfg, refs
        self.launches_fn, self.progress = launches_fn, progress
        self._launch_cache: Optional[list] = None

    # Each item: (chunk index, chunk PairSet, launches of that chunk).
    def chunks(self) -> Iterator[tuple]:
        if not self.ds.lazy:
            if self._launch_cache is None:
                pairs = self.ds.load()
                self._launch_cache = [(0, pairs, list(self.launches_fn(pairs, self.cfg.chunking)))]
            yield from self._launch_cache
            return
        for ci, chunk in enumerate(self.ds.chunks()):
            yield ci, chunk, list(self.launches_fn(chunk, self.cfg.chunking))

    def one_pass(self, on_chunk: Optional[Callable] = None) -> Pass:
        timing = {k: 0.0 for k in TIMING_KEYS}
        n_fallback, infos, n_launches = 0, [], 0
        for ci, chunk, launches in self.chunks():
            if on_chunk is not None:
                refusal = self.b.refuse_reason(chunk)
                if refusal:
                    raise _Refused(refusal)
            outs = []
            t0 = time.perf_counter()
            for launch in launches:
                outs.append(self.b.run(launch))
            wall = time.perf_counter() - t0
            timing["total"] += wall
            n_launches += len(launches)
            for ex in outs:
                for s in STAGES:
                    timing[s] += float(ex.timing.get(s, 0.0) or 0.0)
                n_fallback += int(ex.n_fallback or 0)
                if ex.info:
                    infos.append(ex.info)
            if on_chunk is not None:
                got = np.concatenate([np.asarray(ex.log10, dtype=np.float64) for ex in outs]) \
                    if outs else np.zeros(0)
                if len(got) != n_items(chunk):
                    raise RuntimeError(f"backend returned {len(got)} values for "
                                       f"{n_items(chunk)} items")
                on_chunk(ci, chunk, got, wall)
        return Pass(timing, n_fallback, infos, n_launches)

    def run(self, rec: RunRecord) -> None:
        cfg = self.cfg
        tally = CheckTally(cfg.tolerance, nonfinite_equal=getattr(self.ds, "nonfinite_equal",
                                                                  False))
        peer = not getattr(self.b, "scores", True)
        check_note = None if peer else self._checker(rec, tally)
        warm = self.one_pass(on_chunk=check_note)
        rec.n_fallback = warm.n_fallback
        rec.launches = warm.n_launches
        infos = list(warm.infos)

        passes: list[Pass] = []
        totals: list[float] = []
        started = time.perf_counter()
        while True:
            p = self.one_pass()
            passes.append(p)
            totals.append(p.timing["total"])
            infos.extend(p.infos)
            self.progress.repeat(len(passes))
            if stop_repeating(totals, time.perf_counter() - started, cfg):
                break

        rec.repeats = len(passes)
        for k in TIMING_KEYS:
            vals = [p.timing[k] for p in passes]
            rec.timing_s[k] = statistics.median(vals)
            rec.timing_min_s[k] = min(vals)
            rec.timing_max_s[k] = max(vals)
        cells = rec.cells or 0
        if rec.timing_s["kernel"] > 0:
            rec.gcups_kernel = cells / rec.timing_s["kernel"] / 1e9
        if rec.timing_s["total"] > 0:
            rec.gcups_total = cells / rec.timing_s["total"] / 1e9
        rec.info.update(merge_infos(infos))

        rec.n_checked, rec.n_over_tol = tally.n_checked, tally.n_over_tol
        rec.n_nonfinite = tally.n_nonfinite
        rec.max_abs_err = tally.max_abs_err if tally.n_checked else None
        rec.max_abs_err_expected = tally.max_abs_err_expected
        if peer:
            rec.status = "peer"
            rec.reason = "not cross-checked: " + (getattr(self.b, "peer_note", "") or
                                                  "it reports no per-item results")
        elif not self.refs.available:
            rec.status = "unchecked"
            rec.reason = f"not cross-checked: reference '{cfg.reference}' unavailable: " \
                         f"{self.refs.reason}"
        elif tally.n_over_tol:
            rec.status = "mismatch"
            worst = "NaN/inf" if math.isinf(tally.max_abs_err) else f"{tally.max_abs_err:.3g}"
            rec.reason = (f"{tally.n_over_tol} of {tally.n_checked} checked pairs differ from the "
                          f"reference by more than {cfg.tolerance:g} (max {worst}"
                          + (f", {tally.n_nonfinite} non-finite" if tally.n_nonfinite else "")
                          + ")")
        else:
            rec.status = "ok"
        if rec.status in ("ok", "mismatch") and (self.ds.lazy or (rec.pairs and
                                                                tally.n_checked < rec.pairs)):
            rec.sampled = True
            if rec.status == "ok":
                what = "sequences" if rec.workload == "profile" else "pairs"
                rec.reason = f"checked a sample of {tally.n_checked} {what}"

    def _checker(self, rec: RunRecord, tally: CheckTally) -> Callable:
        """The per-chunk callback of the warm-up pass: compare with the reference."""
        cfg, refs, ds = self.cfg, self.refs, self.ds
        full, n_sample = check_plan(ds, rec.cells or 0, rec.pairs or 0, cfg)
        is_reference = self.b.name == cfg.reference

        def check(ci: int, chunk: PairSet, got: np.ndarray, wall: float) -> None:
            if not refs.available:
                return
            if full:
                hit = refs.lookup(ds.sha256, "full")
                if hit is not None and len(hit[0]) != n_items(chunk):
                    hit = None  # a stale entry: recompute
                if hit is None and is_reference:
                    # The reference under test computes its own reference (its cold warm-up
                    # pass): this saves a second run of the slowest backend.
                    refs.store(ds.sha256, "full", got, wall)
                    ref, seconds, fresh = got, wall, True
                elif hit is not None:
                    ref, seconds, fresh = hit[0], hit[1], False
                else:
                    ref, seconds, fresh = refs.compute(ds.sha256, "full", chunk, force=True)
                if fresh:
                    rec.reference_s = seconds
                tally.add(got, ref, chunk.expected)
                return
            idx = sample_indexes(n_items(chunk), n_sample, seed=ci)
            sub = subset_items(chunk, idx)
            ref, seconds, fresh = refs.compute(ds.sha256, f"c{ci}-s{n_sample}", sub)
            if fresh:
                rec.reference_s = (rec.reference_s or 0.0) + seconds
            tally.add(got[idx], ref, None if chunk.expected is None else chunk.expected[idx])

        return check


class _Refused(Exception):
    pass


#: fewest items a sampled check covers, whatever the cell budget
MIN_SAMPLE = 100


def check_plan(ds: Dataset, cells: int, items: int, cfg: RunConfig) -> tuple:
    """(check everything?, sample size otherwise). A dataset's ``check_cells`` budget (the
    profile workload: per score kind) caps the reference's work: a sample of about that many
    cells, at most ``cfg.sample_pairs`` items."""
    budget = getattr(ds, "check_cells", None)
    if budget is None:
        return (not ds.lazy and cells <= cfg.full_check_max_cells), cfg.sample_pairs
    budget = min(budget, cfg.full_check_max_cells)
    if not ds.lazy and cells <= budget:
        return True, items
    k = int(items * budget / cells) if cells else items
    return False, max(1, min(cfg.sample_pairs, max(MIN_SAMPLE, k)))


def stop_repeating(totals: list, elapsed: float, cfg: RunConfig) -> bool:
    """Whether the timed passes so far are enough (see the module docstring)."""
    k = len(totals)
    if cfg.repeat:
        return k >= cfg.repeat
    if k >= cfg.max_repeats:
        return True
    if k == 1 and totals[0] >= cfg.max_time:
        return True
    if k < cfg.min_repeats:
        return False
    if elapsed >= cfg.max_time:
        return True
    return running_median_spread(totals) < cfg.stable_spread


def running_median_spread(totals: list, window: int = 3) -> float:
    """Relative spread (max-min)/median of the running median over the last ``window`` passes."""
    if len(totals) < window:
        return math.inf
    meds = [statistics.median(totals[:j]) for j in range(len(totals) - window + 1,
                                                         len(totals) + 1)]
    mid = statistics.median(meds)
    return (max(meds) - min(meds)) / mid if mid > 0 else 0.0


def _numbers(v) -> list:
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _numbers(item)]
    try:
        f = float(v)
    except (TypeError, ValueError):
        return []
    return [f] if math.isfinite(f) else []


def merge_infos(infos: Iterable[dict]) -> dict:
    """Backend-reported info over all launches and passes: last value per key wins, except SM
    clocks, which are summarised as min/max seen; ``throttled`` when clocks fell below 90 % of the
    maximum seen (or any report said so)."""
    merged: dict = {}
    clocks: list = []
    throttled = False
    for info in infos:
        for k, v in info.items():
            if k == "sm_clock_mhz":
                clocks.extend(_numbers(v))
            if k == "throttled":
                throttled = throttled or bool(v)
                continue
            merged[k] = v
    if clocks:
        lo, hi = min(clocks), max(clocks)
        merged["sm_clock_mhz_min"], merged["sm_clock_mhz_max"] = lo, hi
        throttled = throttled or lo < 0.9 * hi
    if clocks or throttled:
        merged["throttled"] = throttled
    return merged


# --- the benchmark --------------------------------------------------------------------------

def _dataset_size(ds: Dataset) -> tuple:
    if ds.lazy:
        return ds.n_pairs, ds.n_cells
    unit = ds.load()
    return n_items(unit), unit.cells


def _safe(fn, default):
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return default


def run_cell(ds: Dataset, backend: Backend, cfg: RunConfig, refs: ReferenceStore,
             launches_fn: Optional[Callable] = None, progress: Optional[Progress] = None,
             size: Optional[tuple] = None) -> RunRecord:
    """One dataset x backend cell; never raises for backend failures (they become records)."""
    progress = progress or Progress()
    launches_fn = launches_fn or _default_launches
    n_pairs, n_cells = size if size is not None else _dataset_size(ds)
    tolerance = getattr(ds, "tolerance", None)
    if tolerance is not None and not cfg.tolerance_fixed:
        cfg = replace(cfg, tolerance=tolerance)
    rec = RunRecord(dataset=ds.name, dataset_sha256=ds.sha256, pairs=n_pairs, cells=n_cells,
                    backend=backend.name, api=backend.api, family=backend.family,
                    precision=backend.precision, params=dict(backend.params),
                    chunking=cfg.chunking, tolerance=cfg.tolerance,
                    workload=getattr(backend, "workload", cfg.workload))
    for k, v in (getattr(ds, "axes", None) or {}).items():
        setattr(rec, k, v)
    avail = probe(backend)
    if not avail.available:
        rec.status, rec.reason = "unavailable", avail.reason or "unavailable"
        return rec
    rec.device = str(_safe(backend.device_name, "unknown"))
    try:
        if not ds.lazy:
            refusal = backend.refuse_reason(ds.load())
            if refusal:
                rec.status, rec.reason = "unavailable", f"refused: {refusal}"
                return rec
        _CellRunner(ds, backend, cfg, refs, launches_fn, progress).run(rec)
    except _Refused as exc:
        rec.status, rec.reason = "unavailable", f"refused: {exc}"
    except Exception as exc:  # noqa: BLE001 - one failing backend never stops the others
        rec.status = "error"
        rec.reason = f"{type(exc).__name__}: {exc}".strip()
    return rec


def fill_speedups(records: list, reference: str = REFERENCE_BACKEND,
                  reference_seconds: Optional[dict] = None) -> None:
    """Speed-up vs the reference backend's median total on the same dataset (and chunking).

    Falls back to the time of one cold reference pass (from the reference cache) when the
    reference backend did not run; ``speedup_basis`` says which."""
    ref_total = {}
    for r in records:
        if r.backend == reference and r.status in ("ok", "mismatch", "unchecked") \
                and r.timing_s.get("total"):
            ref_total[(r.dataset_sha256, r.chunking)] = r.timing_s["total"]
    for r in records:
        t = r.timing_s.get("total")
        if not t or r.status not in ("ok", "mismatch", "unchecked"):
            continue
        base = ref_total.get((r.dataset_sha256, r.chunking))
        if base:
            r.speedup_vs_reference, r.speedup_basis = base / t, "measured"
        elif reference_seconds and reference_seconds.get(r.dataset_sha256):
            r.speedup_vs_reference = reference_seconds[r.dataset_sha256] / t
            r.speedup_basis = "reference_s"


def flag_throttling(records: list) -> None:
    """Across runs on one device: a run whose SM clock fell below 90 % of the highest clock seen
    on that device in this benchmark is throttled too (a run that is slow throughout would not
    show a drop within itself)."""
    top: dict = {}
    for r in records:
        hi = r.info.get("sm_clock_mhz_max")
        if hi is not None:
            top[(r.api, r.device)] = max(top.get((r.api, r.device), 0.0), hi)
    for r in records:
        lo = r.info.get("sm_clock_mhz_min")
        if lo is not None and lo < 0.9 * top[(r.api, r.device)]:
            r.info["throttled"] = True
            r.info["sm_clock_mhz_device_max"] = top[(r.api, r.device)]


@dataclass
class Benchmark:
    """What :func:`run_benchmark` measured: records plus the devices used."""
    records: list
    devices: list
    chunking: str
    config: dict


def run_benchmark(datasets: list, backends: list, cfg: RunConfig,
                  progress: Optional[Progress] = None,
                  launches_fn: Optional[Callable] = None,
                  refs: Optional[ReferenceStore] = None,
                  backends_for: Optional[Callable] = None) -> Benchmark:
    """Every dataset x chunking mode x backend cell; ``backends_for(dataset)`` (default: all of
    ``backends``) picks the backends of each dataset (profile: those that compute its kind)."""
    progress = progress or Progress()
    launches_fn = launches_fn or _default_launches
    backends_for = backends_for or (lambda ds: backends)
    from .model import empty_pairset
    # No chunking given: each dataset's own default (synthetic sets run merged, as in the papers).
    def modes_for(ds: Dataset) -> list:
        return chunking_modes(cfg.chunking or ds.default_chunking or "original")

    modes_of = {id(ds): modes_for(ds) for ds in datasets}
    for mode in {m for ms in modes_of.values() for m in ms}:
        launches_fn(empty_pairset(), mode)  # a bad chunking mode fails before any work
    refs = refs or ReferenceStore.for_config(cfg)
    records: list[RunRecord] = []
    ref_seconds: dict = {}
    chosen = {id(ds): list(backends_for(ds)) for ds in datasets}
    progress.start(sum(len(modes_of[id(ds)]) * len(chosen[id(ds)]) for ds in datasets))
    try:
        for ds in datasets:
            # The reference backend runs first so that its warm-up fills the reference cache.
            order = sorted(chosen[id(ds)], key=lambda b: b.name != cfg.reference)
            note = _safe(getattr(ds, "loading_note", lambda: None), None)
            if note:
                progress.note(note)
            size = _dataset_size(ds)
            modes = modes_of[id(ds)]
            for mode in modes:
                cell_cfg = replace(cfg, chunking=mode)
                done = {}
                for b in order:
                    label = getattr(ds, "label", ds.name)
                    progress.begin(label if len(modes) == 1 else f"{label} [{mode}]", b.name)
                    done[id(b)] = run_cell(ds, b, cell_cfg, refs, launches_fn, progress, size)
                    progress.end(done[id(b)])
                records.extend(done[id(b)] for b in chosen[id(ds)])
            hit = refs.lookup(ds.sha256, "full") if refs.available else None
            if hit is not None and hit[1] is not None:
                ref_seconds[ds.sha256] = hit[1]
            if not ds.lazy:
                ds._cache = None  # free memory between datasets
    finally:
        progress.stop()
        for b in backends:
            _safe(b.close, None)
        if refs.backend is not None and refs.backend not in backends:
            _safe(refs.backend.close, None)
    fill_speedups(records, cfg.reference, ref_seconds)
    flag_throttling(records)
    devices: dict = {}
    for r in records:
        if r.status != "unavailable":
            d = devices.setdefault((r.api, r.device), {"api": r.api, "name": r.device,
                                                       "backends": []})
            if r.backend not in d["backends"]:
                d["backends"].append(r.backend)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    used = dict.fromkeys(m for ds in datasets for m in modes_of[id(ds)])
    return Benchmark(records, list(devices.values()), ",".join(used), config)


def chunking_modes(chunking: str) -> list:
    """The chunking axis: one mode, or several separated by commas ("original,merged")."""
    modes = [m.strip() for m in str(chunking).split(",") if m.strip()]
    return list(dict.fromkeys(modes)) or ["original"]
