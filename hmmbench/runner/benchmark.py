"""The whole benchmark: every dataset x chunking mode x backend cell, then speed-ups, throttle
flags and the devices used."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Optional

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
    """What :func:`run_benchmark` measured: records plus the devices used."""
    records: list
    devices: list
    chunking: str
    config: dict
    #: hmmbench.cluster: the cluster, and the scaling study of a sharded run (None: one process)
    cluster: Optional[dict] = None


def run_benchmark(datasets: list, backends: list, cfg: RunConfig,
                  progress: Optional[Progress] = None,
                  launches_fn: Optional[Callable] = None,
                  refs: Optional[ReferenceStore] = None,
                  backends_for: Optional[Callable] = None) -> Benchmark:
    """Every dataset x chunking mode x backend cell; ``backends_for(dataset)`` (default: all of
    ``backends``) picks the backends of each dataset (profile: those that compute its kind)."""
    progress = progress or Progress()
    from ..workload import get
    workload = get(cfg.workload)
    launches_fn = launches_fn or workload.launches
    backends_for = backends_for or (lambda ds: backends)
    # No chunking given: each dataset's own default (synthetic sets run merged, as in the papers).
    def modes_for(ds: Dataset) -> list:
        return chunking_modes(cfg.chunking or ds.default_chunking or "original")

    modes_of = {id(ds): modes_for(ds) for ds in datasets}
    for mode in {m for ms in modes_of.values() for m in ms}:
        workload.check_chunking(mode)  # a bad chunking mode fails before any work
    refs = refs or ReferenceStore.for_config(cfg)
    refs.notify = progress.note
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
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    used = dict.fromkeys(m for ds in datasets for m in modes_of[id(ds)])
    return Benchmark(records, devices_of(records), ",".join(used), config)


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
