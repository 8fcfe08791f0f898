"""History: how each cell's speed moved across result files, in the order they were made.

Result files carry their provenance: when they were created, the sha256 of the sources that ran
(``source_sha256``), the git commit when the run had a checkout (``source_commit``, newer files)
and the hmmbench version. :func:`load_history` orders the files by their commit's time where the
commit is recorded and this checkout's git knows it, else by creation time (the device copies of
the tree have no git history, so time is the order every file has), and follows each
cell (dataset, backend, chunking and cell axes) through them: its kernel and total GCUPS per
file, marking the points where the sources (S), the device (D) or the dataset's bytes (B: the
same name, another sha256) changed since the cell's previous point, so a jump can be told from a
code change, from other hardware or from other data. A trend's change is measured only over the
points with the last point's bytes: other bytes are not comparable.
"""
from __future__ import annotations

import datetime as _dt
import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import results
from .compare import match_key
from .errors import UserError
from .fileio import input_problem

SPARKS = "▁▂▃▄▅▆▇█"


@dataclass
class Snapshot:
    """One result file: where and when it was made, from which sources."""
    index: int
    path: str
    created: str
    sources: str             # the git commit when recorded, else the sources' sha256 ("" unknown)
    version: str
    devices: list


@dataclass
class Point:
    snapshot: int            # index into History.snapshots
    device: str
    gcups_kernel: Optional[float]
    gcups_total: Optional[float]
    status: str
    marks: str = ""          # since the previous point: "S" sources, "D" device, "B" data bytes
    data: str = ""           # the dataset's sha256 ("" unrecorded)


@dataclass
class History:
    snapshots: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)     # match key -> [Point], in snapshot order
    skipped: list = field(default_factory=list)   # (path, why) of JSON files that are no results


def result_files(paths: list) -> list:
    """The JSON files named, directories searched recursively; missing paths are user errors."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.rglob("*.json")))
        else:
            problem = input_problem(p)
            if problem:
                raise UserError(f"{p}: {problem}")
            out.append(p)
    return out


def _when(text: str) -> _dt.datetime:
    try:
        t = _dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def commit_time(commit: str, cache: dict) -> Optional[str]:
    """The committer time of ``commit`` in the checkout hmmbench runs from (None: unknown)."""
    if commit not in cache:
        import subprocess
        root = Path(__file__).resolve().parent.parent
        try:
            out = subprocess.run(["git", "-C", str(root), "show", "-s", "--format=%cI", commit],
                                 capture_output=True, text=True, timeout=10)
            cache[commit] = out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            cache[commit] = None
    return cache[commit]


def _order(doc: dict, cache: dict) -> tuple:
    """Commit time first (a file made later from older sources sorts before newer sources),
    then creation time."""
    when = commit_time(doc["source_commit"], cache) if doc.get("source_commit") else None
    created = _when(doc["created"])
    return (_when(when) if when else created, created)


def load_history(paths: list, backend: Optional[str] = None,
                 dataset: Optional[str] = None) -> History:
    """Every cell's points across the result files under ``paths``, oldest file first.

    Files named explicitly must be result files; inside a directory, other JSON files are
    skipped (and listed). ``backend``/``dataset``: glob filters on the cells.
    """
    explicit = {Path(p) for p in paths if not Path(p).is_dir()}
    docs = []
    hist = History()
    for f in result_files(paths):
        try:
            docs.append((str(f), results.load(f)))
        except UserError as exc:
            if f in explicit:
                raise
            hist.skipped.append((str(f), str(exc)))
        except json.JSONDecodeError as exc:  # pragma: no cover - load() turns these into UserError
            hist.skipped.append((str(f), str(exc)))
    cache: dict = {}
    docs.sort(key=lambda pd: (*_order(pd[1], cache), pd[0]))
    for i, (path, doc) in enumerate(docs):
        hist.snapshots.append(Snapshot(
            i, path, doc["created"], doc.get("source_commit") or doc.get("source_sha256") or "",
            str(doc.get("hmmbench_version", "")),
            sorted({d.get("name", "") for d in doc.get("devices", [])})))
        for r in doc["runs"]:
            if backend and not fnmatch.fnmatchcase(r["backend"], backend):
                continue
            if dataset and not fnmatch.fnmatchcase(r["dataset"], dataset):
                continue
            points = hist.cells.setdefault(match_key(r), [])
            point = Point(i, r.get("device") or "", r.get("gcups_kernel"), r.get("gcups_total"),
                          r["status"], data=r.get("dataset_sha256") or "")
            if points and points[-1].snapshot == i:
                points[-1] = point          # one point per file: its last run of the cell
            else:
                points.append(point)
    for points in hist.cells.values():
        _mark(points, hist.snapshots)
    return hist


def _mark(points: list, snapshots: list) -> None:
    for prev, cur in zip(points, points[1:]):
        a, b = snapshots[prev.snapshot].sources, snapshots[cur.snapshot].sources
        cur.marks = ("S" if a and b and a != b else "") + \
            ("D" if prev.device != cur.device else "") + \
            ("B" if prev.data and cur.data and prev.data != cur.data else "")


def comparable_tail(points: list) -> list:
    """The last points that ran the last point's bytes (back to the first other sha256)."""
    tail = []
    for p in reversed(points):
        if tail and p.data and tail[-1].data and p.data != tail[-1].data:
            break
        tail.append(p)
    return tail[::-1]


def sparkline(values: list) -> str:
    """One character per value, scaled to the values' own range; '·' for a missing one."""
    known = [v for v in values if v is not None]
    if not known:
        return "·" * len(values)
    lo, hi = min(known), max(known)
    span = (hi - lo) or 1.0
    return "".join("·" if v is None else SPARKS[min(len(SPARKS) - 1,
                                                     int((v - lo) / span * len(SPARKS)))]
                   for v in values)


def trend_rows(hist: History, min_points: int = 1) -> list:
    """Plain rows, one per cell with at least ``min_points`` points: key, points, first, last,
    change (%) of kernel GCUPS, last total GCUPS, the marks with their file numbers."""
    rows = []
    for key, points in hist.cells.items():
        if len(points) < min_points:
            continue
        kern = [p.gcups_kernel for p in points]
        known = [p.gcups_kernel for p in comparable_tail(points) if p.gcups_kernel is not None]
        first, last = (known[0], known[-1]) if known else (None, None)
        change = (last / first - 1.0) * 100.0 if first and last else None
        marks = ", ".join(f"{p.marks}@{p.snapshot + 1}" for p in points if p.marks)
        rows.append({"key": key, "points": points, "first": first, "last": last, "change": change,
                     "total_last": points[-1].gcups_total, "spark_kernel": sparkline(kern),
                     "spark_total": sparkline([p.gcups_total for p in points]), "marks": marks})
    return rows
