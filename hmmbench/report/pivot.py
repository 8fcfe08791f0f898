"""One metric as a table of cells x backends (or any axis), as data for the printers."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..errors import UserError
from ..results import CELL_SIZE, DATA_AXES, cell_axes, run_label
from .formats import fmt_error, fmt_number, fmt_seconds


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


@dataclass
class Pivot:
    """One metric pivoted, as data: the leading headers (dataset, chunking where it varies, data
    axes, size), the column names, each row's leading cells and the {(row, column): text} cells."""
    metric: str
    by: str
    heads: list
    rows: list
    cols: list
    cells: dict
    lead: Callable = field(repr=False)
    title: str = ""
    labels: dict = field(default_factory=dict)    # column -> the name it shows, where shorter

    def label(self, col: str) -> str:
        return self.labels.get(col, col)

    def row_cells(self, row) -> list:
        return self.lead(row) + [self.cells.get((row, c), "") for c in self.cols]


def make_pivot(runs: Iterable[dict], metric: str, by: str = "backend", title: str = "") -> Pivot:
    """:func:`pivot` with its leading cells: chunking only when it varies."""
    runs = list(runs)
    rows, cols, cells = pivot(runs, metric, by)
    heads = pivot_layout(runs, by)
    keep = [i for i, h in enumerate(heads) if h != "chunking" or len({row[i] for row in rows}) > 1]
    return Pivot(metric, by, [heads[i] for i in keep], rows, cols, cells,
                 lambda row: [str(row[i]) for i in keep], title or metric)
