"""The scaling study: the same sharded benchmark on 1, 2, ... workers, and its table.

Per worker count N and cell (dataset, chunking, backend; profile: model and kind): the wall time
of the whole sharded call (``total``), aggregate GCUPS end to end (cells / total) and kernel-only
(cells / the slowest worker's kernel time), and the parallel efficiency T1 / (N x TN) of both,
T1 being the 1-worker time (or, without a 1-worker run, the smallest count's, scaled: Tm x m;
a cell run at one worker count only has no baseline, so no efficiency: ``baseline_workers`` None);
``outside_s``, the part of ``total`` beyond the slowest worker's whole task (Dask's round trip
and the result transfer: what does not shrink with more workers). A dataset with several cells (a
profile sweep: models x kinds) also gets a row of all its cells summed (``cells`` > 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

#: a cell run at one worker count: nothing to compare its time with
NO_BASELINE = "no baseline: one worker count (run --workers 1,N)"
#: what identifies one cell across worker counts
CELL_KEYS = ("dataset_sha256", "chunking", "backend", "model", "kind")


def fill_efficiency(records: list) -> list:
    """Set ``parallel_efficiency`` (end to end) and ``parallel_efficiency_kernel`` in each sharded
    record's info; returns the scaling rows (plain dicts, JSON-ready)."""
    groups: dict = {}
    for r in records:
        if r.workers and r.status in ("ok", "unchecked", "mismatch") and r.timing_s.get("total"):
            groups.setdefault(tuple(getattr(r, k) for k in CELL_KEYS), []).append(r)
    rows = []
    for runs in groups.values():
        runs.sort(key=lambda r: r.workers)
        base = runs[0] if len({r.workers for r in runs}) > 1 else None
        for r in runs:
            row = {"dataset": r.dataset, "chunking": r.chunking, "backend": r.backend,
                   "model": r.model, "kind": r.kind, "workers": r.workers, "device": r.device,
                   "total_s": r.timing_s["total"], "kernel_s": r.timing_s.get("kernel"),
                   "gcups_total": r.gcups_total, "gcups_kernel": r.gcups_kernel,
                   "baseline_workers": base and base.workers}
            for key, stage in (("parallel_efficiency", "total"),
                               ("parallel_efficiency_kernel", "kernel")):
                t1 = (base.timing_s.get(stage) or 0.0) * base.workers if base else 0.0
                tn = r.timing_s.get(stage) or 0.0
                row[key] = r.info[key] = t1 / (r.workers * tn) if t1 and tn else None
            r.info["parallel_efficiency_basis"] = (f"{base.workers} worker(s)" if base else
                                                   NO_BASELINE)
            row["per_worker"] = r.info.get("worker_stages", [])
            row["outside_s"] = _outside(row)
            rows.append(row)
    return rows + _summed(rows)


def _outside(row: dict):
    """The call's wall beyond its slowest worker's whole task (files before ``task``: its
    launches' wall); None without the workers' times."""
    walls = [w.get("task") or w.get("wall") or 0.0 for w in row.get("per_worker") or []]
    return max(0.0, row["total_s"] - max(walls)) if walls else None


def completed(rows: list) -> list:
    """Stored rows as :func:`fill_efficiency` makes them today (files written before
    ``outside_s`` and the summed rows existed get them, from the same data)."""
    rows = [{**r, "outside_s": r.get("outside_s", _outside(r))} for r in rows]
    return rows if any(r.get("cells") for r in rows) else rows + _summed(rows)


def _summed(rows: list) -> list:
    """Per dataset, chunking and backend of several cells: the cells' times summed at each worker
    count that every cell ran, and the efficiency of the sums (a sweep's figure)."""
    by_set: dict = {}
    for row in rows:
        key = (row["dataset"], row["chunking"], row["backend"])
        by_set.setdefault(key, {}).setdefault((row["model"], row["kind"]), {})[
            row["workers"]] = row
    out = []
    for (dataset, chunking, backend), cells in by_set.items():
        if len(cells) < 2:
            continue
        counts = sorted(set.intersection(*(set(c) for c in cells.values())))
        if not counts:
            continue
        sums = {}
        for n in counts:
            rs = [c[n] for c in cells.values()]
            total = sum(r["total_s"] for r in rs)
            kernel = sum(r["kernel_s"] or 0.0 for r in rs)
            cell_count = sum((r["gcups_total"] or 0.0) * r["total_s"] for r in rs)   # G cells
            sums[n] = (total, kernel, cell_count, sum(r["outside_s"] or 0.0 for r in rs))
        base = counts[0] if len(counts) > 1 else None
        for n in counts:
            total, kernel, g, outside = sums[n]
            t1, k1 = (sums[base][0] * base, sums[base][1] * base) if base else (0.0, 0.0)
            out.append({"dataset": dataset, "chunking": chunking, "backend": backend,
                        "model": "all", "kind": f"{len(cells)} cells", "cells": len(cells),
                        "workers": n, "device": None, "total_s": total, "kernel_s": kernel,
                        "gcups_total": g / total if total else None,
                        "gcups_kernel": g / kernel if kernel else None,
                        "baseline_workers": base, "outside_s": outside,
                        "parallel_efficiency": t1 / (n * total) if t1 and total else None,
                        "parallel_efficiency_kernel": k1 / (n * kernel) if k1 and kernel
                        else None,
                        "per_worker": []})
    return out


SCALING_TITLE = "scaling (parallel efficiency = T1 / (N x TN))"


@dataclass
class Scaling:
    """What a cluster run's document says about scaling, for the printers: its rows (with the
    summed ones) and the shards that re-ran on another worker."""
    rows: list
    retried: list = field(default_factory=list)
    title: str = SCALING_TITLE

    @property
    def notes(self) -> list:
        """What the table's figures need said beside them (a row without a baseline)."""
        lacking = any(row.get("baseline_workers") is None for row in self.rows)
        return [f"efficiency: {NO_BASELINE}"] if lacking else []


def of_document(doc: dict) -> Optional[Scaling]:
    """A document's scaling rows and retried shards; None when it has neither."""
    cluster = doc.get("cluster") or {}
    rows = completed(cluster["scaling"]) if cluster.get("scaling") else []
    retried = list(cluster.get("shards_retried") or [])
    return Scaling(rows, retried) if rows or retried else None
