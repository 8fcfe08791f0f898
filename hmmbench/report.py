"""Printing: rich tables of result documents, progress while running, and GCUPS plots.

Everything here takes plain run dicts (as stored in result files, or ``RunRecord.to_dict()``), so
a stored result re-renders exactly like a fresh one.
"""
from __future__ import annotations

import math
import sys
from collections import OrderedDict
from typing import Iterable

from .errors import UserError
from .results import CELL_SIZE, DATA_AXES, cell_axes, run_label
from .runner import Progress, RunRecord

STATUS_STYLE = {"ok": "green", "mismatch": "bold red", "error": "red",
                "unavailable": "yellow", "unchecked": "magenta", "peer": "cyan"}
THROTTLE_MARK = "⚠"


def _time_unit(s: float) -> tuple:
    """(scale, unit) that fmt_seconds shows ``s`` in."""
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1, 1e3, "ms"), (120, 1, "s")):
        if s < limit:
            return scale, unit
    return 1 / 60, "min"


def fmt_seconds(s) -> str:
    """Seconds with a sensible unit: 3.2 µs, 45.1 ms, 1.23 s, 2.0 min."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    if s == 0:
        return "0"
    scale, unit = _time_unit(s)
    return f"{s * scale:.3g} {unit}"


def fmt_spread(median, lo=None, hi=None) -> str:
    """A stage's median with the min-max of the timed passes in the median's unit, when they
    differ from it at the shown precision: "63.1 ms (62.8–95)"."""
    text = fmt_seconds(median)
    if not median or lo is None or hi is None:
        return text
    scale, _ = _time_unit(median)
    low, mid, high = (f"{x * scale:.3g}" for x in (lo, median, hi))
    return text if low == mid == high else f"{text} ({low}–{high})"


def fmt_count(n) -> str:
    if n is None:
        return "-"
    n = int(n)
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


def fmt_number(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def fmt_error(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str) or not math.isfinite(x):    # as stored: "Infinity", "NaN"
        return "NaN/inf"
    return "0" if x == 0 else f"{x:.1e}"


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
    from .workload import get
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


def run_table(key: tuple, runs: list):
    """One rich Table: the backends that ran on one dataset (and chunking)."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text
    t = Table(title=escape(table_title(key, runs)), title_justify="left", header_style="bold")
    for header, right in COLUMNS:
        t.add_column(header.replace("GCUPS ", "GCUPS\n"), justify="right" if right else "left",
                     no_wrap=True)
    for r in runs:
        cells = row_cells(r)
        t.add_row(*cells[:-1], Text(cells[-1], style=STATUS_STYLE.get(r["status"], "")))
    return t


def markdown(doc_or_runs) -> str:
    """The report as Markdown (for results/README.md): a header line, then a table and notes
    per dataset and chunking."""
    runs, doc = _runs_and_doc(doc_or_runs)
    out = []
    if doc is not None:
        out.append(f"_{header_line(doc)}_\n")
    for key, group in by_dataset(runs).items():
        out.append(f"**{table_title(key, group)}**\n")
        out.append("| " + " | ".join(h for h, _ in COLUMNS) + " |")
        out.append("|" + "|".join("---:" if right else "---" for _, right in COLUMNS) + "|")
        for r in group:
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |")
        for backend, status, text in notes(group):
            out.append(f"- {backend} [{status}]: {text}")
        out.append("")
    summary = sweeps(runs)
    if summary:
        out.append(f"**{SWEEP_TITLE}**\n")
        out.append("| " + " | ".join(h for h, _ in SWEEP_COLUMNS) + " |")
        out.append("|" + "|".join("---:" if right else "---" for _, right in SWEEP_COLUMNS) + "|")
        out.extend("| " + " | ".join(sweep_cells(x)) + " |" for x in summary)
        out.append("")
    return "\n".join(out)


def csv_text(doc_or_runs) -> str:
    """One row per run with raw numbers (seconds, GCUPS), for spreadsheets and plots."""
    import csv
    import io
    runs, _ = _runs_and_doc(doc_or_runs)
    fields = ["dataset", "chunking", "backend", "api", "family", "precision", "device", "pairs",
              "cells", *(f"{s}_s" for s in ("prep", "h2d", "kernel", "d2h", "total")),
              "gcups_kernel", "gcups_total", "speedup_vs_reference", "max_abs_err", "n_checked",
              "n_over_tol", "n_fallback", "repeats", "throttled", "status", "reason",
              "workload", "model", "model_length", "kind", "residues", "sampled"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in runs:
        row = {k: r.get(k) for k in fields if k in r}
        for s in ("prep", "h2d", "kernel", "d2h", "total"):
            row[f"{s}_s"] = (r.get("timing_s") or {}).get(s)
        row["throttled"] = bool((r.get("info") or {}).get("throttled"))
        w.writerow(row)
    return buf.getvalue()


#: Metrics a pivot can show, with their formatter.
PIVOT_METRICS = {
    "gcups_kernel": lambda r: fmt_number(r.get("gcups_kernel"), 4),
    "gcups_total": lambda r: fmt_number(r.get("gcups_total"), 4),
    "kernel": lambda r: fmt_seconds((r.get("timing_s") or {}).get("kernel")),
    "total": lambda r: fmt_seconds((r.get("timing_s") or {}).get("total")),
    "max_abs_err": lambda r: fmt_error(r.get("max_abs_err")),
}


def axis_value(r: dict, axis: str):
    """A run's value on an axis: a record field (backend, device, chunking, dataset, a cell axis)
    or one of the backend's parameters (tile, block, ...); None when the run lacks it."""
    v = r.get(axis)
    if v is not None and not isinstance(v, (dict, list)):
        return v
    return (r.get("params") or {}).get(axis)


def _series_namer(runs: list, by: str):
    """A function naming a run's backend without the pivot axis ``by``: for a backend parameter
    (``tile``), its API and family and the other parameters that vary within that family; for a
    record field (``device``, ``kind``), the backend's name. The method axes other than ``by``
    (profile: the score kind) follow."""
    is_field = any(r.get(by) is not None and not isinstance(r.get(by), (dict, list)) for r in runs)
    varying: dict = {}
    for r in runs:
        varying.setdefault((r.get("api"), r.get("family")), []).append(r.get("params") or {})
    for fam, plist in varying.items():
        keys = dict.fromkeys(k for p in plist for k in p if k != by)
        varying[fam] = [k for k in keys if len({str(p.get(k)) for p in plist}) > 1]

    def name(r: dict) -> str:
        if is_field:
            base = r["backend"]
        else:
            params = r.get("params") or {}
            rest = ", ".join(f"{k}={params.get(k)}" for k in varying[r.get("api"), r.get("family")]
                             if params.get(k) is not None)
            base = f"{r.get('api')} {r.get('family')}" + (f" ({rest})" if rest else "")
        method = [str(v) for k, v in cell_axes(r).items() if k not in DATA_AXES and k != by]
        return " ".join([base] + method)
    return name


def pivot_layout(runs: list, by: str = "backend") -> list:
    """The headers of a pivot row's leading cells (see :func:`pivot`)."""
    size_field, size_name = CELL_SIZE
    heads = ["dataset", "chunking"] + [k for k in DATA_AXES if any(r.get(k) is not None
                                                                   for r in runs)]
    if any(r.get(size_field) is not None for r in runs):
        heads.append(size_name)
    return heads + (["backend"] if by != "backend" else [])


def pivot(runs: Iterable[dict], metric: str, by: str = "backend") -> tuple:
    """Rows of datasets (and chunking, data axes such as the profile's model, ordered by size:
    the model-size curve) x columns of ``by`` (default the backend, with the cell axes that say
    what was computed, such as the profile's score kind) of one metric, as plain data.

    ``by`` may be any axis: a record field or a backend parameter (``tile``); the rows then also
    name the backend without that parameter. Returns (row keys, column names, {(row, column):
    text}); a run that is not ok shows its status, a whole-pipeline peer its figure marked "(peer)".
    """
    if metric not in PIVOT_METRICS:
        raise UserError(f"unknown pivot metric '{metric}' (valid: {', '.join(PIVOT_METRICS)})")
    fmt = PIVOT_METRICS[metric]
    runs = list(runs)
    if by != "backend":
        having = [r for r in runs if axis_value(r, by) is not None]
        if runs and not having:
            found = sorted({k for r in runs for k in (r.get("params") or {})})
            raise UserError(f"no run has the axis '{by}' (parameters found: "
                            f"{', '.join(found) or 'none'})")
        runs = having
    # Result files from several devices may share backend names: then the column names the device.
    devices: dict = {}
    for r in runs:
        devices.setdefault(run_label(r), set()).add(r.get("device"))
    series = _series_namer(runs, by)
    size_field = CELL_SIZE[0]
    heads = pivot_layout(runs, by)

    def column(r):
        if by != "backend":
            return f"{by}={axis_value(r, by)}"
        name = run_label(r)
        if len(devices[name]) > 1 or r.get("worker") is not None:
            name = f"{name} ({r.get('device')})"
        method = [str(v) for k, v in cell_axes(r).items() if k not in DATA_AXES]
        return " ".join([name] + method)

    def row_key(r):
        key = [r["dataset"], r.get("chunking", "")] + [r.get(k) for k in DATA_AXES if k in heads]
        if CELL_SIZE[1] in heads:
            key.append(r.get(size_field))
        if by != "backend":
            key.append(series(r))
        return tuple(key)

    rows, cols, cells = [], [], {}
    for r in runs:
        row, col = row_key(r), column(r)
        if row not in rows:
            rows.append(row)
        if col not in cols:
            cols.append(col)
        cells[row, col] = (fmt(r) if r["status"] == "ok" else
                           f"{fmt(r)} (peer)" if r["status"] == "peer" else r["status"])
    if by != "backend":
        cols.sort(key=lambda c: _sort_value(c.split("=", 1)[1]))
    if any(set(cell_axes(r)) - set(DATA_AXES) for r in runs):
        # backend x method columns that ran nowhere (no driver here) only widen the curve
        cols = [c for c in cols if any(cells.get((row, c), "unavailable") != "unavailable"
                                       for row in rows)] or cols
    if CELL_SIZE[1] in heads:
        first: dict = {}
        for i, row in enumerate(rows):
            first.setdefault(row[0], i)
        at = heads.index(CELL_SIZE[1])
        rows.sort(key=lambda row: (first[row[0]], row[at] or 0, str(row)))
    return rows, cols, cells


def _sort_value(text: str) -> tuple:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def _pivot_lead(runs: list, rows: list, by: str) -> tuple:
    """The header and the leading cells of each pivot row (chunking only when it varies)."""
    heads = pivot_layout(runs, by)
    keep = [i for i, h in enumerate(heads) if h != "chunking" or len({row[i] for row in rows}) > 1]
    return [heads[i] for i in keep], lambda row: [str(row[i]) for i in keep]


def pivot_markdown(runs: Iterable[dict], metric: str, by: str = "backend") -> str:
    runs = list(runs)
    rows, cols, cells = pivot(runs, metric, by)
    lead_head, lead = _pivot_lead(runs, rows, by)
    head = lead_head + cols
    out = ["| " + " | ".join(head) + " |", "|---" * (len(head) - len(cols)) + "|---:" * len(cols) + "|"]
    for row in rows:
        out.append("| " + " | ".join(lead(row) + [cells.get((row, c), "") for c in cols]) + " |")
    return "\n".join(out) + "\n"


def pivot_table(runs: Iterable[dict], metric: str, title: str = "", by: str = "backend"):
    from rich.markup import escape
    from rich.table import Table
    runs = list(runs)
    rows, cols, cells = pivot(runs, metric, by)
    heads = pivot_layout(runs, by)
    t = Table(title=title or metric, title_justify="left", header_style="bold")
    t.add_column(escape(" × ".join(["dataset [chunking]"] + heads[2:])), no_wrap=True)
    for c in cols:
        t.add_column(c, justify="right")
    for row in rows:
        label = f"{row[0]} [{row[1]}]" if row[1] else str(row[0])
        label = " × ".join([label] + [str(v) for v in row[2:] if v is not None])
        t.add_row(escape(label), *(cells.get((row, c), "") for c in cols))
    return t


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
            bits.append(f"db load {fmt_seconds(sum(load.values()))} (prep "
                        f"{fmt_seconds(load.get('prep'))}, h2d {fmt_seconds(load.get('h2d'))}), "
                        "once per database: a first search costs db load + total")
        if bits:
            out.append((r["backend"], r["status"], "; ".join(bits)))
    return out


#: Columns of the sweep summary: (header, right-aligned).
SWEEP_COLUMNS = (("database", False), ("backend", False), ("kind", False), ("models", True),
                 ("cells", True), ("kernel", True), ("total", True), ("db load", True),
                 ("GCUPS kernel", True), ("GCUPS total", True), ("GCUPS first", True))


def sweeps(runs: Iterable[dict]) -> list:
    """Aggregates of model sweeps (several models x one database, backend and kind, measured
    runs only): summed cells, kernel and total medians, the database's one-off load; GCUPS
    kernel = cells / kernel, total = cells / total, first = cells / (db load + total)."""
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    loads: dict = {}
    for r in runs:
        load = (r.get("info") or {}).get("db_load_s")
        if load:
            loads[(r["dataset"], r["backend"])] = sum(load.values())
        if r.get("model") is not None and r["status"] in ("ok", "unchecked", "peer") \
                and (r.get("timing_s") or {}).get("total"):
            groups.setdefault((r["dataset"], r["backend"], r.get("kind")), []).append(r)
    out = []
    for (dataset, backend, kind), group in groups.items():
        if len({r.get("model") for r in group}) < 2:
            continue
        cells = sum(r.get("cells") or 0 for r in group)
        kernel = sum(r["timing_s"].get("kernel") or 0.0 for r in group)
        total = sum(r["timing_s"]["total"] for r in group)
        load = loads.get((dataset, backend), 0.0)
        out.append({"database": dataset, "backend": backend, "kind": kind,
                    "models": len(group), "cells": cells, "kernel_s": kernel,
                    "total_s": total, "db_load_s": load,
                    "gcups_kernel": cells / kernel / 1e9 if kernel else None,
                    "gcups_total": cells / total / 1e9,
                    "gcups_first": cells / (total + load) / 1e9})
    return out


def sweep_cells(s: dict) -> list:
    return [s["database"], s["backend"], str(s["kind"]), str(s["models"]), fmt_count(s["cells"]),
            fmt_seconds(s["kernel_s"]), fmt_seconds(s["total_s"]),
            fmt_seconds(s["db_load_s"]) if s["db_load_s"] else "-",
            fmt_number(s["gcups_kernel"]), fmt_number(s["gcups_total"]),
            fmt_number(s["gcups_first"])]


SWEEP_TITLE = ("model sweeps: every model against the resident database, summed (GCUPS first "
               "= with the one-off db load)")


def _runs_and_doc(doc_or_runs) -> tuple:
    if isinstance(doc_or_runs, dict):
        return doc_or_runs["runs"], doc_or_runs
    return [r.to_dict() if isinstance(r, RunRecord) else r for r in doc_or_runs], None


def header_line(doc: dict) -> str:
    host = doc.get("host", {})
    devs = ", ".join(f"{d.get('api')}: {d.get('name')}" for d in doc.get("devices", []))
    return (f"hmmbench {doc.get('hmmbench_version')} | {doc.get('created')} | "
            f"host {host.get('cpu', '?')} | devices: {devs or '-'}")


def render(doc_or_runs, console=None, show_header: bool = True) -> None:
    """Print result tables (a result document, or a list of run dicts / RunRecords)."""
    from rich.console import Console
    from rich.text import Text
    console = console or Console()
    runs, doc = _runs_and_doc(doc_or_runs)
    if doc is not None and show_header:
        console.print(Text(header_line(doc), style="dim"))
    for key, group in by_dataset(runs).items():
        console.print(run_table(key, group))
        for backend, status, text in notes(group):
            console.print(Text.assemble(("  " + backend, "bold"), (f" [{status}] ",
                                        STATUS_STYLE.get(status, "")), text))
    summary = sweeps(runs)
    if summary:
        from rich.table import Table
        t = Table(title=SWEEP_TITLE, title_justify="left", header_style="bold")
        for header, right in SWEEP_COLUMNS:
            t.add_column(header.replace("GCUPS ", "GCUPS\n"),
                         justify="right" if right else "left", no_wrap=True)
        for x in summary:
            t.add_row(*sweep_cells(x))
        console.print(t)


# --- progress -------------------------------------------------------------------------------

class PlainProgress(Progress):
    """A line per finished run (for logs and pipes)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.n, self.total = 0, 0

    def start(self, n_cells: int) -> None:
        self.total = n_cells

    def note(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def end(self, record: RunRecord) -> None:
        self.n += 1
        tm = record.timing_s.get("total")
        extra = f" total {fmt_seconds(tm)} x{record.repeats}" if tm is not None else ""
        gc = f" {record.gcups_kernel:.3g} GCUPS(kernel)" if record.gcups_kernel else ""
        why = f" ({record.reason})" if record.reason and record.status != "ok" else ""
        print(f"[{self.n}/{self.total}] {cell_label(record)} {record.backend}: "
              f"{record.status}"
              f"{extra}{gc}{why}", file=self.stream, flush=True)


class RichProgress(Progress):
    """A live progress bar on stderr: dataset x backend cells, repeat count of the current one."""

    def __init__(self, console=None):
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as _P, TextColumn,
                                   TimeElapsedColumn)
        self.console = console or Console(stderr=True)
        self._p = _P(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                     TimeElapsedColumn(), console=self.console, transient=True)
        self._task = None
        self._label = ""

    def start(self, n_cells: int) -> None:
        self._p.start()
        self._task = self._p.add_task("starting", total=n_cells)

    def note(self, text: str) -> None:
        from rich.text import Text
        self._p.console.print(Text(text, style="dim"), highlight=False)

    def begin(self, dataset: str, backend: str) -> None:
        from rich.markup import escape
        self._label = escape(f"{dataset} × {backend}")  # the description is rendered as markup
        self._p.update(self._task, description=f"{self._label} (warm-up)")

    def repeat(self, n: int) -> None:
        self._p.update(self._task, description=f"{self._label} (repeat {n})")

    def end(self, record: RunRecord) -> None:
        from rich.text import Text
        # Text, not markup: dataset names may be paths with brackets.
        line = Text(f"{cell_label(record)} × "
                    f"{record.backend}: ")
        line.append(record.status, style=STATUS_STYLE.get(record.status, ""))
        if record.reason and record.status != "ok":
            line.append(f" ({record.reason})", style="dim")
        self._p.console.print(line, highlight=False)
        self._p.advance(self._task)

    def stop(self) -> None:
        self._p.stop()


def make_progress(stream=None) -> Progress:
    stream = stream or sys.stderr
    return RichProgress() if getattr(stream, "isatty", lambda: False)() else PlainProgress(stream)
