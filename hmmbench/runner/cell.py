"""One dataset x backend cell: an untimed warm-up pass that is cross-checked, then timed passes
until the stopping criterion says enough; backend failures become records, never exceptions."""
from __future__ import annotations

import math
import statistics
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Optional

import numpy as np

from ..backend import STAGES, Backend
from ..dataset import Dataset, joined_unit
from ..registry import probe
from ..workload import get
from .check import CheckTally, check_plan, sample_indexes
from .config import TIMING_KEYS, Progress, RunConfig, RunRecord
from .reference import ReferenceStore
from .stopping import criterion_for
from .units import grouped_pieces, n_items, subset_items


#: A checked pass over this many times ``warmup_time`` is warm-up enough (see ``warm_up``).
WARMUP_PASS_LIMIT = 10


@dataclass
class Pass:
    timing: dict
    n_fallback: int
    n_launches: int


def run_launches(backend: Backend, launches: list, in_flight: int = 1) -> tuple:
    """(the Executions, wall seconds) of one backend over a unit's launches, in order; the wall
    time leaves out what the backend reports as untimed (``Execution.untimed_s``).
    ``in_flight`` > 1: up to that many launches submitted (``Backend.submit``) before the
    oldest is collected, as a caller working on several regions at once does."""
    t0 = time.perf_counter()
    if in_flight <= 1:
        outs = [backend.run(launch) for launch in launches]
    else:
        outs, pending = [], deque()
        for launch in launches:
            if len(pending) == in_flight:
                outs.append(pending.popleft().result())
            pending.append(backend.submit(launch))
        outs += [handle.result() for handle in pending]
    return outs, time.perf_counter() - t0 - sum(ex.untimed_s for ex in outs)


def add_stages(timing: dict, outs: list, infos) -> int:
    """Add the launches' stage times into ``timing`` and append their infos to ``infos`` (a
    list, or an :class:`InfoMerge` that merges them as they come); returns how many items fell
    back to float64."""
    n_fallback = 0
    sums = [timing.get(s, 0.0) for s in STAGES]
    for ex in outs:
        t = ex.timing
        for i, s in enumerate(STAGES):
            sums[i] += float(t.get(s) or 0.0)
        # a stage of a backend's own (a peer program's own batch timer) is kept beside them
        for s in t.keys() - set(STAGES):
            timing[s] = timing.get(s, 0.0) + float(t[s] or 0.0)
        n_fallback += int(ex.n_fallback or 0)
        if ex.info:
            infos.append(ex.info)
    timing.update(zip(STAGES, sums))
    return n_fallback


def joined_values(outs: list) -> np.ndarray:
    """The launches' results joined in order, as float64."""
    return np.concatenate([np.asarray(ex.log10, dtype=np.float64) for ex in outs]) \
        if outs else np.zeros(0)


def _default_launches(cfg: RunConfig) -> Callable:
    """The workload's own way of cutting a unit into launches by a chunking mode."""
    return get(cfg.workload).launches


class _CellRunner:
    """Runs one backend on one dataset: warm-up + check, then timed passes."""

    def __init__(self, dataset: Dataset, backend: Backend, cfg: RunConfig,
                 refs: ReferenceStore, launches_fn: Callable, progress: Progress):
        self.ds, self.b, self.cfg, self.refs = dataset, backend, cfg, refs
        self.launches_fn, self.progress = launches_fn, progress
        self._launch_cache: Optional[list] = None

    # Each item: (chunk index, chunk unit, launches of that chunk, pieces of the set it joins).
    def chunks(self) -> Iterator[tuple]:
        mode = self.cfg.chunking
        if not self.ds.lazy:
            if self._launch_cache is None:
                unit = self.ds.load()
                self._launch_cache = [(0, unit, list(self.launches_fn(unit, mode)), 1)]
            yield from self._launch_cache
            return
        # A launch size past one piece joins whole pieces into one launch, before the timer
        # starts (a sharded run's pieces are joined on the workers instead)
        size = get(self.cfg.workload).launch_items(mode) \
            if getattr(self.ds, "pieces_joinable", True) else 0
        for ci, group in enumerate(grouped_pieces(self.ds.chunks(), size)):
            unit = joined_unit(group)
            launches = [unit] if len(group) > 1 else list(self.launches_fn(unit, mode))
            yield ci, unit, launches, len(group)

    def one_pass(self, infos: "InfoMerge", on_chunk: Optional[Callable] = None) -> Pass:
        """One pass over the dataset's launches; their infos are merged into ``infos`` as they
        come (a run of 110 calls per pass keeps no list of 110 dicts per pass)."""
        timing = {k: 0.0 for k in TIMING_KEYS}
        n_fallback, n_launches = 0, 0
        for ci, chunk, launches, n_pieces in self.chunks():
            if on_chunk is not None:
                refusal = self.b.refuse_reason(chunk)
                if refusal:
                    raise _Refused(refusal)
            outs, wall = run_launches(self.b, launches, self.cfg.in_flight)
            timing["total"] += wall
            n_launches += len(launches)
            n_fallback += add_stages(timing, outs, infos)
            if on_chunk is not None:
                got = joined_values(outs)
                if len(got) != n_items(chunk):
                    raise RuntimeError(f"backend returned {len(got)} values for "
                                       f"{n_items(chunk)} items")
                on_chunk(ci, chunk, got, wall, n_pieces)
        return Pass(timing, n_fallback, n_launches)

    def warm_up(self, checked_s: float) -> int:
        """Untimed passes after the checked one until ``warmup_time`` seconds have passed: a
        call of a millisecond right after the cross-check finds the host's caches cold (1m
        merged on an H100: its first timed passes 1.0-1.3 ms, then 0.8-0.9). None for a lazy
        set (its passes generate their pieces) or where the checked pass took over
        WARMUP_PASS_LIMIT x that (its first call's set-up included): at most one extra pass of
        a few seconds. Returns how many ran."""
        budget = self.cfg.warmup_time
        if not budget > 0 or self.ds.lazy or not checked_s < WARMUP_PASS_LIMIT * budget:
            return 0
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < budget:
            self.one_pass(InfoMerge())
            n += 1
        return n

    def run(self, rec: RunRecord) -> None:
        cfg = self.cfg
        tally = CheckTally(cfg.tolerance, nonfinite_equal=getattr(self.ds, "nonfinite_equal",
                                                                  False),
                           range_floor=get(cfg.workload).range_floor)
        peer = not getattr(self.b, "scores", True)
        check_note = None if peer else self._checker(rec, tally)
        infos = InfoMerge()
        warm = self.one_pass(infos, on_chunk=check_note)
        rec.n_fallback = warm.n_fallback
        rec.launches = warm.n_launches
        # a peer whose every pass is a cold start (a process that reads its files, as a user
        # runs it) times its first pass too: hmmsearch once per model, not twice
        cold = peer and getattr(self.b, "first_pass_timed", False)
        rec.warmup_passes = 0 if cold else self.warm_up(warm.timing["total"])

        passes: list[Pass] = []
        criterion = criterion_for(cfg)
        started = time.perf_counter()
        if cold:
            passes.append(warm)
            criterion.add(warm.timing["total"])
            rec.stopped_by = criterion.stop_reason(0.0)
        while not rec.stopped_by:
            p = self.one_pass(infos)
            passes.append(p)
            criterion.add(p.timing["total"])
            self.progress.repeat(len(passes))
            rec.stopped_by = criterion.stop_reason(time.perf_counter() - started)
            if rec.stopped_by:
                break

        rec.repeats = len(passes)
        own = sorted({k for p in passes for k in p.timing} - set(TIMING_KEYS))
        for k in (*TIMING_KEYS, *own):
            vals = [p.timing.get(k, 0.0) for p in passes]
            rec.timing_s[k] = statistics.median(vals)
            rec.timing_min_s[k] = min(vals)
            rec.timing_max_s[k] = max(vals)
            rec.samples_s[k] = vals
        cells = rec.cells or 0
        if rec.timing_s["kernel"] > 0:
            rec.gcups_kernel = cells / rec.timing_s["kernel"] / 1e9
        if rec.timing_s["total"] > 0:
            rec.gcups_total = cells / rec.timing_s["total"] / 1e9
        rec.info.update(infos.merged())
        if cfg.in_flight > 1:
            rec.info["stage_sums_overlap"] = (
                f"up to {cfg.in_flight} calls in flight: total is the wall time of all calls; "
                "the stage times are per-call sums and may add up to more")

        rec.n_checked, rec.n_over_tol = tally.n_checked, tally.n_over_tol
        rec.n_nonfinite = tally.n_nonfinite
        rec.n_past_range = tally.n_past_range
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
        what = get(rec.workload).item_noun
        notes = []
        if rec.status in ("ok", "mismatch") and (self.ds.lazy or (rec.pairs and
                                                                tally.n_checked < rec.pairs)):
            rec.sampled = True
            notes.append(f"checked a sample of {tally.n_checked} {what}")
        if rec.info.get("memory_pieces"):
            notes.append(f"each call run in {rec.info['memory_pieces']} pieces, to bound its "
                         "memory")
        if tally.n_past_range:
            notes.append(f"{what} past the number range (below {tally.range_floor:.4g}, -inf) "
                         f"as in the reference: {tally.n_past_range}")
        if rec.status == "ok" and notes:
            rec.reason = "; ".join(notes)

    def _checker(self, rec: RunRecord, tally: CheckTally) -> Callable:
        """The per-chunk callback of the warm-up pass: compare with the reference."""
        cfg, refs, ds = self.cfg, self.refs, self.ds
        full, n_sample = check_plan(ds, rec.cells or 0, rec.pairs or 0, cfg)
        is_reference = self.b.name == cfg.reference
        # the chunk's first item in the dataset: with the chunk's size, the sample's key (a
        # sharded run may cut a lazy set into other pieces)
        offset = 0

        def check(ci: int, chunk, got: np.ndarray, wall: float, n_pieces: int = 1) -> None:
            nonlocal offset
            start, offset = offset, offset + n_items(chunk)
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
            k = n_sample * n_pieces        # as many per piece as when each is its own launch
            idx = sample_indexes(n_items(chunk), k, seed=ci)
            sub = subset_items(chunk, idx)
            ref, seconds, fresh = refs.compute(
                ds.sha256, f"c{ci}@{start}+{n_items(chunk)}-s{k}", sub)
            if fresh:
                rec.reference_s = (rec.reference_s or 0.0) + seconds
            tally.add(got[idx], ref, None if chunk.expected is None else chunk.expected[idx])

        return check


class _Refused(Exception):
    pass


def _numbers(v) -> list:
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _numbers(item)]
    try:
        f = float(v)
    except (TypeError, ValueError):
        return []
    return [f] if math.isfinite(f) else []


class InfoMerge:
    """Backend-reported infos merged as they come (see :func:`merge_infos`): the last value per
    key and the SM clocks' extremes, not every launch's dict."""

    def __init__(self):
        self._last: dict = {}
        self._clock_lo = self._clock_hi = None
        self._throttled = False

    def append(self, info: dict) -> None:
        """Merge one more info (named like list.append: ``add_stages`` takes either)."""
        last = self._last
        last.update(info)
        if "throttled" in info:
            self._throttled = self._throttled or bool(info["throttled"])
        clock = info.get("sm_clock_mhz")
        if clock is not None:
            one = isinstance(clock, (int, float)) and math.isfinite(clock)  # the common case
            for f in ((float(clock),) if one else _numbers(clock)):
                if self._clock_lo is None:
                    self._clock_lo = self._clock_hi = f
                else:
                    self._clock_lo, self._clock_hi = min(self._clock_lo, f), max(self._clock_hi, f)

    def merged(self) -> dict:
        merged = {k: v for k, v in self._last.items() if k != "throttled"}
        throttled = self._throttled
        if self._clock_lo is not None:
            lo, hi = self._clock_lo, self._clock_hi
            merged["sm_clock_mhz_min"], merged["sm_clock_mhz_max"] = lo, hi
            throttled = throttled or lo < 0.9 * hi
        if self._clock_lo is not None or throttled:
            merged["throttled"] = throttled
        return merged


def merge_infos(infos: Iterable[dict]) -> dict:
    """Backend-reported info over all launches and passes: last value per key wins, except SM
    clocks, which are summarised as min/max seen; ``throttled`` when clocks fell below 90 % of the
    maximum seen (or any report said so)."""
    acc = InfoMerge()
    for info in infos:
        acc.append(info)
    return acc.merged()


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
    launches_fn = launches_fn or _default_launches(cfg)
    n_pairs, n_cells = size if size is not None else _dataset_size(ds)
    tolerance = getattr(ds, "tolerance", None)
    if tolerance is not None and not cfg.tolerance_fixed:
        cfg = replace(cfg, tolerance=tolerance)
    rec = RunRecord(dataset=ds.name, dataset_sha256=ds.sha256, pairs=n_pairs, cells=n_cells,
                    backend=backend.name, api=backend.api, family=backend.family,
                    precision=backend.precision, params=dict(backend.params),
                    chunking=cfg.chunking, in_flight=cfg.in_flight, tolerance=cfg.tolerance,
                    workload=getattr(backend, "workload", cfg.workload))
    for k, v in (getattr(ds, "axes", None) or {}).items():
        setattr(rec, k, v)
    avail = probe(backend)
    if not avail.available:
        rec.status, rec.reason = "unavailable", avail.reason or "unavailable"
        return rec
    rec.device = str(_safe(backend.device_name, "unknown"))
    refusal = _safe(lambda: backend.refuse_chunking(cfg.chunking), None)
    if refusal:
        rec.status, rec.reason = "unavailable", f"refused: {refusal}"
        return rec
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
        rec.reason = error_reason(exc)
    return rec


def error_reason(exc: BaseException, limit: int = 300) -> str:
    """An exception as a one-line reason: its first line and first later line that names an
    error (a compiler's build log can run to pages), at most ``limit`` characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    first_error = next((line for line in lines[1:] if "error" in line.lower()), None)
    if first_error:
        text += f" | {first_error}"
    if len(lines) > 1:
        text += f" (+{len(lines) - 1} lines)"
    return text if len(text) <= limit else text[:limit - 3] + "..."
