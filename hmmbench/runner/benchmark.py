"""The whole benchmark: every dataset x chunking mode x backend cell, then speed-ups, throttle
flags and the devices used."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from ..backend import Backend
from ..dataset import Dataset
from .cell import _dataset_size, _safe, run_cell
from .config import REFERENCE_BACKEND, Progress, RunConfig, RunRecord
from .reference import ReferenceStore


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
    """What :func:`run_benchmark` measured: records plus the devices used. ``not_run``: the
    cells of the matrix without a record (a checkpoint of a run still going, or interrupted),
    as :meth:`Cell.stored` dicts."""
    records: list
    devices: list
    chunking: str
    config: dict
    #: hmmbench.cluster: the cluster, and the scaling study of a sharded run (None: one process)
    cluster: Optional[dict] = None
    not_run: list = field(default_factory=list)


@dataclass(frozen=True)
class Cell:
    """One dataset x chunking mode x backend of the matrix."""
    dataset: Dataset
    mode: str
    backend: Backend

    @property
    def key(self) -> tuple:
        """What identifies the cell across runs (and in result files)."""
        return (self.dataset.sha256, self.mode, self.backend.name)

    @property
    def slot(self) -> tuple:
        """The cell within one run: its key and the dataset's name."""
        return self.key + (self.dataset.name,)

    def stored(self) -> dict:
        """The cell as a result file's ``not_run`` list holds it (its key, and a name to read)."""
        sha, mode, backend = self.key
        return {"dataset": self.dataset.name, "dataset_sha256": sha, "chunking": mode,
                "backend": backend}


def plan_cells(datasets: list, backends: list, cfg: RunConfig,
               backends_for: Optional[Callable] = None) -> list:
    """The matrix in report order: dataset-major, then chunking mode, then backend;
    ``backends_for(dataset)`` (default: all of ``backends``) picks each dataset's backends
    (profile: those that compute its kind). A bad chunking mode fails here, before any work."""
    from ..workload import get
    workload = get(cfg.workload)
    backends_for = backends_for or (lambda ds: backends)
    cells = []
    for ds in datasets:
        # No chunking given: each dataset's own default (synthetic sets run merged, as in the
        # papers).
        modes = chunking_modes(cfg.chunking or ds.default_chunking or "original")
        for mode in modes:
            workload.check_chunking(mode)
        chosen = list(backends_for(ds))
        cells += [Cell(ds, mode, b) for mode in modes for b in chosen]
    return cells


def run_benchmark(datasets: list, backends: list, cfg: RunConfig,
                  progress: Optional[Progress] = None,
                  launches_fn: Optional[Callable] = None,
                  refs: Optional[ReferenceStore] = None,
                  backends_for: Optional[Callable] = None,
                  kept: Optional[dict] = None,
                  checkpoint: Optional[Callable[[Benchmark], None]] = None) -> Benchmark:
    """Every cell of :func:`plan_cells`'s matrix. ``kept`` maps cell keys to records of an
    earlier run of the same matrix: those cells are not run again (``--resume``).
    ``checkpoint(benchmark so far)`` is called after every finished cell, so that a long run
    keeps what it finished whatever ends it."""
    progress = progress or Progress()
    from ..workload import get
    launches_fn = launches_fn or get(cfg.workload).launches
    kept = kept or {}
    cells = plan_cells(datasets, backends, cfg, backends_for)
    refs = refs or ReferenceStore.for_config(cfg)
    refs.notify = progress.note
    # Records by cell key and dataset name: two files with identical bytes (one key) are two
    # rows, each under its own name.
    finished: dict = {c.slot: kept[c.key] for c in cells if c.key in kept}
    ref_seconds: dict = {}
    used_modes = list(dict.fromkeys(c.mode for c in cells))
    todo = [c for c in cells if c.slot not in finished]
    if finished:
        progress.note(f"resuming: {len(finished)} of {len(cells)} cells kept, {len(todo)} to run")

    def so_far() -> Benchmark:
        records = [finished[c.slot] for c in cells if c.slot in finished]
        not_run = [c.stored() for c in cells if c.slot not in finished]
        return summarize(records, cfg, ref_seconds, used_modes, not_run)

    progress.start(len(todo))
    try:
        for ds in datasets:
            mine = [c for c in todo if c.dataset is ds]
            if not mine:
                continue
            note = _safe(getattr(ds, "loading_note", lambda: None), None)
            if note:
                progress.note(note)
            size = _dataset_size(ds)
            modes = list(dict.fromkeys(c.mode for c in cells if c.dataset is ds))
            for mode in modes:
                cell_cfg = replace(cfg, chunking=mode)
                # The reference backend runs first so that its warm-up fills the reference cache.
                group = sorted((c for c in mine if c.mode == mode),
                               key=lambda c: c.backend.name != cfg.reference)
                for c in group:
                    label = getattr(ds, "label", ds.name)
                    progress.begin(label if len(modes) == 1 else f"{label} [{mode}]",
                                   c.backend.name)
                    finished[c.slot] = run_cell(ds, c.backend, cell_cfg, refs, launches_fn,
                                                progress, size)
                    progress.end(finished[c.slot])
                    if checkpoint is not None:
                        checkpoint(so_far())
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
    return so_far()


def summarize(records: list, cfg: RunConfig, ref_seconds: dict, modes: list,
              not_run: Optional[list] = None) -> Benchmark:
    """Speed-ups, throttle flags and the devices used, over the records (in place)."""
    fill_speedups(records, cfg.reference, ref_seconds)
    flag_throttling(records)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    return Benchmark(records, devices_of(records), ",".join(modes), config,
                     not_run=list(not_run or []))


def devices_of(records: list) -> list:
    """The devices the records ran on, each with its backends (in order of first use)."""
    devices: dict = {}
    for r in records:
        if r.status != "unavailable":
            d = devices.setdefault((r.api, r.device), {"api": r.api, "name": r.device,
                                                       "backends": []})
            if r.backend not in d["backends"]:
                d["backends"].append(r.backend)
    return list(devices.values())


def chunking_modes(chunking: str) -> list:
    """The chunking axis: one mode, or several separated by commas ("original,merged")."""
    modes = [m.strip() for m in str(chunking).split(",") if m.strip()]
    return list(dict.fromkeys(modes)) or ["original"]
