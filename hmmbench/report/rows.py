"""The rows of a report: how runs are grouped into cells (dataset and cell axes) and what one
row shows."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

from ..backend import STAGES
from ..results import CELL_SIZE, DATA_AXES, cell_axes, run_label
from ..runner import RunRecord
from .formats import THROTTLE_MARK, fmt_count, fmt_error, fmt_number, fmt_seconds, fmt_spread


def _getter(r):
    return r.get if isinstance(r, dict) else (lambda k, d=None: getattr(r, k, d))


def group_key(r: dict) -> tuple:
    """What one report table holds: a dataset and chunking, and the cell axes the runs carry
    (profile: model and score kind)."""
    return (r["dataset"], r.get("chunking", ""), *cell_axes(r).values())


def cell_label(r) -> str:
    """A run's dataset axes in one phrase (progress lines, notes, plots)."""
    get = _getter(r)
    size_field, size_name = CELL_SIZE
    out = [f"{get('dataset')} [{get('chunking', '')}]" if get("chunking") else str(get("dataset"))]
    for k, v in cell_axes(r).items():
        size = get(size_field) if k in DATA_AXES else None
        out.append(f"{v} ({size_name}={size})" if size is not None else str(v))
    return " × ".join(out)


def by_dataset(runs: Iterable[dict]) -> "OrderedDict[tuple, list]":
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for r in runs:
        groups.setdefault(group_key(r), []).append(r)
    return groups


#: Report columns: (header, right-aligned).
COLUMNS = (("backend", False), ("prep", True), ("h2d", True), ("kernel", True), ("d2h", True),
           ("total", True), ("GCUPS kernel", True), ("GCUPS total", True), ("vs ref", True),
           ("max err", True), ("fallback", True), ("reps", True), ("status", False))


def table_title(key: tuple, runs: list) -> str:
    from ..workload import get
    first = runs[0]
    try:
        noun = get(first.get("workload")).item_noun
    except Exception:  # noqa: BLE001 - a result file of a workload this install lacks
        noun = "items"
    residues = f"{fmt_count(first['residues'])} residues, " if first.get("residues") else ""
    return (f"{cell_label(first)}: {fmt_count(first.get('pairs'))} {noun}, {residues}"
            f"{fmt_count(first.get('cells'))} cells")


def row_cells(r: dict) -> list:
    """One run's cells, formatted, in COLUMNS order (shared by every output format)."""
    ran = bool(r.get("timing_s"))
    tm = r.get("timing_s") or {}
    lo, hi = r.get("timing_min_s") or {}, r.get("timing_max_s") or {}

    def stage(s: str) -> str:
        return fmt_spread(tm.get(s), lo.get(s), hi.get(s)) if ran else "-"
    total = stage("total")
    if (r.get("info") or {}).get("throttled"):
        total = f"{THROTTLE_MARK} {total}"
    speed = r.get("speedup_vs_reference")
    speed_s = fmt_number(speed) if speed is not None else "-"
    if speed is not None and r.get("speedup_basis") == "reference_s":
        speed_s += "*"
    return [run_label(r),
            *(stage(s) for s in ("prep", "h2d", "kernel", "d2h")),
            total,
            fmt_number(r.get("gcups_kernel")), fmt_number(r.get("gcups_total")),
            speed_s,
            fmt_error(r.get("max_abs_err")) if r.get("n_checked") else "-",
            str(r.get("n_fallback", 0)) if ran else "-",
            str(r.get("repeats", 0)) if ran else "-",
            r["status"]]


def runs_and_doc(doc_or_runs) -> tuple:
    """(run dicts, the document or None) of a result document or a list of runs/records."""
    if isinstance(doc_or_runs, dict):
        return doc_or_runs["runs"], doc_or_runs
    return [r.to_dict() if isinstance(r, RunRecord) else r for r in doc_or_runs], None


def notes(runs: list) -> list:
    """One line per run with something to say: reasons, sampling, throttling."""
    out = []
    for r in runs:
        info = r.get("info") or {}
        bits = []
        if r.get("reason"):
            bits.append(r["reason"])
        if info.get("timing_note"):  # a peer's own timing boundaries
            bits.append(info["timing_note"])
        for stage in own_stages(r):
            seconds = r["timing_s"][stage]
            rate = f", {r['cells'] / seconds / 1e9:,.0f} GCUPS" if r.get("cells") and seconds \
                else ""
            bits.append(f"{stage} {fmt_seconds(seconds)}{rate}")
        if info.get("throttled"):
            lo, hi = info.get("sm_clock_mhz_min"), info.get("sm_clock_mhz_max")
            clocks = f" (SM clock {lo:.0f}-{hi:.0f} MHz)" if lo is not None and hi is not None \
                else ""
            bits.append(f"throttled{clocks}")
        if r.get("max_abs_err_expected") is not None:
            bits.append(f"max err vs the file's expected values {fmt_error(r['max_abs_err_expected'])}")
        if r.get("sampled") and r["status"] == "mismatch":
            bits.append(f"cross-check sampled: {r.get('n_checked')} of {r.get('pairs')} items")
        if r.get("speedup_basis") == "reference_s":
            bits.append("vs ref*: against one cold pass of the reference (it did not run here)")
        load = info.get("db_load_s")
        if load:
            nbytes, h2d = info.get("db_load_bytes"), load.get("h2d")
            rate = f", {nbytes / h2d / 1e9:.1f} GB/s of {nbytes / 1e6:.0f} MB" \
                if nbytes and h2d else ""
            bits.append(f"db load {fmt_seconds(sum(load.values()))} (prep "
                        f"{fmt_seconds(load.get('prep'))}, h2d {fmt_seconds(h2d)}{rate}), "
                        "once per database: a first search costs db load + total")
        if bits:
            out.append((r["backend"], r["status"], "; ".join(bits)))
    return out


STAGE_NAMES = (*STAGES, "total")


def own_stages(run: dict) -> list:
    """The stages a backend timed beyond prep/h2d/kernel/d2h and total (a peer's own batch
    timer), in the record's order."""
    return [s for s in (run.get("timing_s") or {}) if s not in STAGE_NAMES]


def header_line(doc: dict) -> str:
    host = doc.get("host", {})
    devs = ", ".join(f"{d.get('api')}: {d.get('name')}" for d in doc.get("devices", []))
    return (f"hmmbench {doc.get('hmmbench_version')} | {doc.get('created')} | "
            f"host {host.get('cpu', '?')} | devices: {devs or '-'}")
