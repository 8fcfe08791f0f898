"""The terminal report of a result document: one rich table per cell, notes, model sweeps."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

from .formats import STATUS_STYLE, fmt_count, fmt_error, fmt_number, fmt_seconds
from .rows import COLUMNS, by_dataset, row_cells, runs_and_doc, table_title


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
            nbytes, h2d = info.get("db_load_bytes"), load.get("h2d")
            rate = f", {nbytes / h2d / 1e9:.1f} GB/s of {nbytes / 1e6:.0f} MB" \
                if nbytes and h2d else ""
            bits.append(f"db load {fmt_seconds(sum(load.values()))} (prep "
                        f"{fmt_seconds(load.get('prep'))}, h2d {fmt_seconds(h2d)}{rate}), "
                        "once per database: a first search costs db load + total")
        if bits:
            out.append((r["backend"], r["status"], "; ".join(bits)))
    return out


#: Columns of the sweep summary: (header, right-aligned).
SWEEP_COLUMNS = (("database", False), ("backend", False), ("kind", False), ("models", True),
                 ("per cell", True), ("cells", True), ("kernel", True), ("total", True), ("db load", True),
                 ("GCUPS kernel", True), ("GCUPS total", True), ("GCUPS first", True))


def _models_of(r: dict) -> int:
    """Models one record covers: a batched cell's (info.batch_models), else one."""
    return len((r.get("info") or {}).get("batch_models") or [None])


def sweeps(runs: Iterable[dict]) -> list:
    """Aggregates of model sweeps (several models x one database, backend and kind, measured
    runs only): summed cells, kernel and total medians, the database's one-off load; GCUPS
    kernel = cells / kernel, total = cells / total, first = cells / (db load + total). A
    batched sweep (cells of several models each, info.batch_size) is a row of its own: its
    cells already sum their models' M x residues."""
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    loads: dict = {}
    for r in runs:
        load = (r.get("info") or {}).get("db_load_s")
        if load:
            loads[(r["dataset"], r["backend"])] = sum(load.values())
        if r.get("model") is not None and r["status"] in ("ok", "unchecked", "peer") \
                and (r.get("timing_s") or {}).get("total"):
            size = (r.get("info") or {}).get("batch_size") or 1
            groups.setdefault((r["dataset"], r["backend"], r.get("kind"), size), []).append(r)
    out = []
    for (dataset, backend, kind, size), group in groups.items():
        models = sum(_models_of(r) for r in group)
        if models < 2:
            continue
        cells = sum(r.get("cells") or 0 for r in group)
        kernel = sum(r["timing_s"].get("kernel") or 0.0 for r in group)
        total = sum(r["timing_s"]["total"] for r in group)
        load = loads.get((dataset, backend), 0.0)
        out.append({"database": dataset, "backend": backend, "kind": kind,
                    "models": models, "per_cell": size, "cells": cells, "kernel_s": kernel,
                    "total_s": total, "db_load_s": load,
                    "gcups_kernel": cells / kernel / 1e9 if kernel else None,
                    "gcups_total": cells / total / 1e9,
                    "gcups_first": cells / (total + load) / 1e9})
    return out


def sweep_cells(s: dict) -> list:
    return [s["database"], s["backend"], str(s["kind"]), str(s["models"]), str(s["per_cell"]),
            fmt_count(s["cells"]),
            fmt_seconds(s["kernel_s"]), fmt_seconds(s["total_s"]),
            fmt_seconds(s["db_load_s"]) if s["db_load_s"] else "-",
            fmt_number(s["gcups_kernel"]), fmt_number(s["gcups_total"]),
            fmt_number(s["gcups_first"])]


SWEEP_TITLE = ("model sweeps: every model against the resident database, summed (GCUPS first "
               "= with the one-off db load)")


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
    runs, doc = runs_and_doc(doc_or_runs)
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
