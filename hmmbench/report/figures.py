"""What the plots show, as plain data: the same numbers feed the PNG plots (:mod:`.plots`) and
the HTML report's inline SVG (:mod:`.html_page`).

Every function takes run dicts as stored in result files.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from ..backend import STAGES
from .rows import cell_label
from ..results import CELL_AXES, CELL_SIZE, DATA_AXES

#: Statuses whose figures are drawn: cross-checked, unchecked (no reference here) and peers.
DRAWN = ("ok", "unchecked", "peer")


def _length_point(r: dict, cache: dict) -> Optional[tuple]:
    key = (r.get("workload"), r["dataset"])
    if key not in cache:
        from ..workload import get
        try:
            cache[key] = get(r.get("workload")).length_point(r["dataset"])
        except Exception:  # noqa: BLE001 - a workload this install lacks: no curve
            cache[key] = None
    return cache[key]


def line_names(runs: list) -> dict:
    """Each run's line name: its backend, with the device when a backend ran on several."""
    devices: dict = {}
    for r in runs:
        devices.setdefault(r["backend"], set()).add(r.get("device"))
    return {id(r): r["backend"] if len(devices[r["backend"]]) <= 1
            else f"{r['backend']} ({r.get('device')})" for r in runs}


def peak_curves(runs: list) -> "OrderedDict[str, dict]":
    """{series [chunking]: {line: [(L, GCUPS kernel, GCUPS total), ...] by L}} over the
    equal-length generated sets (the workload's :meth:`~hmmbench.workload.Workload.length_point`),
    one line per backend, peers included; series with fewer than two lengths are left out."""
    cache: dict = {}
    names = line_names(runs)
    out: "OrderedDict[str, dict]" = OrderedDict()
    for r in runs:
        lp = _length_point(r, cache)
        if lp is None or r["status"] not in DRAWN or r.get("gcups_kernel") is None:
            continue
        series = f"{lp[0]} [{r.get('chunking', '')}]"
        out.setdefault(series, OrderedDict()).setdefault(names[id(r)], []).append(
            (lp[1], r.get("gcups_kernel"), r.get("gcups_total")))
    return _sorted_curves(out)


def _sorted_curves(out: "OrderedDict[str, dict]") -> "OrderedDict[str, dict]":
    """Sorts every line by x and drops the series with fewer than two x values (no curve)."""
    for series in list(out):
        for line in out[series].values():
            line.sort()
        if len({x for line in out[series].values() for x, _, _ in line}) < 2:
            del out[series]
    return out


def model_size_curves(runs: list) -> "OrderedDict[str, dict]":
    """{dataset × method axes: {line: [(size, GCUPS kernel, GCUPS total), ...]}} for runs that
    carry a cell size (the profile's model length M): the model-size curves."""
    field, _ = CELL_SIZE
    names = line_names(runs)
    out: "OrderedDict[str, dict]" = OrderedDict()
    for r in runs:
        if r.get(field) is None or r["status"] not in DRAWN or r.get("gcups_kernel") is None:
            continue
        method = " × ".join(str(r[k]) for k in CELL_AXES if k not in DATA_AXES and r.get(k))
        series = " × ".join(x for x in (r["dataset"], method) if x)
        out.setdefault(series, OrderedDict()).setdefault(names[id(r)], []).append(
            (r[field], r.get("gcups_kernel"), r.get("gcups_total")))
    return _sorted_curves(out)


def stage_groups(runs: list) -> "OrderedDict[str, list]":
    """{cell label: [(line, {stage: seconds}), ...]} of the runs that were timed: the stage
    breakdown (prep / h2d / kernel / d2h; the rest of the total is host overhead)."""
    names = line_names(runs)
    out: "OrderedDict[str, list]" = OrderedDict()
    for r in runs:
        tm = r.get("timing_s") or {}
        if not tm.get("total"):
            continue
        stages = {s: float(tm.get(s) or 0.0) for s in STAGES}
        stages["other"] = max(0.0, float(tm["total"]) - sum(stages.values()))
        out.setdefault(cell_label(r), []).append((names[id(r)], stages))
    return out


def api_ratios(runs: list) -> list:
    """Twins of two APIs (``cuda-X`` and ``opencl-X``) on the same cell: rows of (cell, twin,
    {api: GCUPS kernel}, {api: GCUPS total}) with both APIs' figures."""
    twins: "OrderedDict[tuple, dict]" = OrderedDict()
    for r in runs:
        api, name = r.get("api") or "", r["backend"]
        if r["status"] not in DRAWN or not name.startswith(api + "-") or not r.get("gcups_kernel"):
            continue
        twins.setdefault((cell_label(r), name[len(api) + 1:]), {})[api] = r
    rows = []
    for (cell, twin), by_api in twins.items():
        if {"cuda", "opencl"} <= set(by_api):
            rows.append((cell, twin, {a: by_api[a].get("gcups_kernel") for a in by_api},
                         {a: by_api[a].get("gcups_total") for a in by_api}))
    return rows
