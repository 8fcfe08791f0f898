"""Head to head: every backend against one (a peer), kernel to kernel and end to end.

Ratios are taken only inside one result document, between rows of one cell (dataset, chunking,
cell axes, calls in flight): the same data on the same device, measured in one run. A ratio is
the other's time over this row's time, so above 1 means faster than the one named. The kernel
ratio needs a kernel time on both sides (a peer without a profiler has none). End to end, a row's
``total`` (layout, copies, kernels, copies back) meets the other's pipeline: a peer program's own
batch timer (its stage ``batch``: transfers and kernels, its process start-up and file parsing
left out, as ours are) where it has one, else its ``total``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import UserError
from ..results import run_label
from .formats import fmt_number
from .listing import Column, Listing
from .rows import by_dataset, cell_label

COUNTED = ("ok", "peer", "mismatch")   # a peer off on some pairs is still timed
#: a peer program's own timer around its GPU pipeline (hmmbench.pairhmm.peers)
PIPELINE_STAGE = "batch"


@dataclass(frozen=True)
class Ratio:
    cell: str
    backend: str
    status: str
    gcups_kernel: Optional[float]
    gcups_total: Optional[float]
    kernel: Optional[float]     # the other's kernel time / this row's
    total: Optional[float]      # the other's pipeline (batch, else total) / this row's total


def _ratio(theirs: Optional[float], ours: Optional[float]) -> Optional[float]:
    return theirs / ours if theirs and ours and theirs > 0 and ours > 0 else None


def versus(runs: list, against: str) -> list:
    """A :class:`Ratio` per row of each cell that holds a row of ``against``."""
    out = []
    for group in by_dataset(runs).values():
        for flight in sorted({r.get("in_flight") or 1 for r in group}):
            rows = [r for r in group if (r.get("in_flight") or 1) == flight]
            base = next((r for r in rows if r["backend"] == against), None)
            if base is None:
                continue
            bt = base.get("timing_s") or {}
            pipeline = bt.get(PIPELINE_STAGE) or bt.get("total")
            for r in rows:
                if r is base:
                    continue
                t = r.get("timing_s") or {}
                counted = r["status"] in COUNTED and base["status"] in COUNTED
                out.append(Ratio(cell_label(r), run_label(r), r["status"], r.get("gcups_kernel"),
                                 r.get("gcups_total"),
                                 _ratio(bt.get("kernel"), t.get("kernel")) if counted else None,
                                 _ratio(pipeline, t.get("total")) if counted else None))
    return out


def versus_listing(runs: list, against: str) -> Listing:
    """The ratios as a table (raises UserError when no cell holds ``against``)."""
    ratios = versus(runs, against)
    if not ratios:
        names = sorted({r["backend"] for r in runs})
        raise UserError(f"--against {against}: no cell of these runs holds that backend beside "
                        f"another (backends: {', '.join(names)})")
    t = Listing(f"against {against}: kernel to kernel and end to end, in one run",
                [Column("dataset", key=True), Column("backend", key=True),
                 Column("GCUPS kernel", right=True, priority=0),
                 Column("x kernel", right=True, priority=0),
                 Column("GCUPS total", right=True, priority=0),
                 Column("x e2e", right=True, priority=0), Column("status", priority=0)],
                name="versus")
    for x in ratios:
        t.add(x.cell, x.backend, fmt_number(x.gcups_kernel), _times(x.kernel),
              fmt_number(x.gcups_total), _times(x.total), x.status)
    timed = any(PIPELINE_STAGE in (r.get("timing_s") or {}) for r in runs
                if r["backend"] == against)
    theirs = f"its own '{PIPELINE_STAGE}' time" if timed else "its total"
    off = [f"{cell_label(r)}: {against} {r['status']} ({r.get('reason') or ''})"
           for r in runs if r["backend"] == against and r["status"] not in ("ok", "peer")]
    t.notes = [[line] for line in off] + [[f"x = {against}'s time / the row's time (above 1: faster than {against}); "
                f"e2e: the row's total against {theirs}; - where a side has no such time or "
                "did not run ok"]]
    return t


def _times(ratio: Optional[float]) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"
