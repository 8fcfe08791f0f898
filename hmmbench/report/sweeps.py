"""Model sweeps (profile: every model against one resident database) summed into one row each."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

from .formats import fmt_count, fmt_number, fmt_seconds


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
