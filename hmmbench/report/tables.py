"""Every report as :class:`~.listing.Listing` tables (plain data): the run tables of a result
document, model sweeps, a pivot, the compare gate's verdicts, history trends, a scaling study.

Statuses and verdicts carry a style name; what a narrow terminal must keep has priority 0
(GCUPS, status, verdict); names are key columns.
"""
from __future__ import annotations

from .formats import STATUS_STYLE, fmt_number, fmt_seconds
from .listing import Column, Listing, Styled
from .rows import COLUMNS, by_dataset, notes, row_cells, table_title
from .sweeps import SWEEP_COLUMNS, SWEEP_TITLE, sweep_cells, sweeps

#: The run table's columns in the order a narrow terminal keeps them.
RUN_PRIORITY = {"backend": 0, "GCUPS kernel": 0, "GCUPS total": 0, "status": 0, "kernel": 1,
                "total": 1, "vs ref": 2, "max err": 2, "reps": 3, "fallback": 3, "prep": 4,
                "h2d": 4, "d2h": 4}
VERDICT_STYLE = {"ok": "green", "faster": "green", "noisy": "yellow", "within noise": "yellow",
                 "hardware comparison": "cyan", "not comparable": "cyan"}


def status_cell(status: str) -> Styled:
    return Styled(status, STATUS_STYLE.get(status, ""))


def run_listings(runs: list) -> list:
    """One table per cell (dataset, chunking, cell axes) with its notes, then model sweeps."""
    out = []
    cols = [Column(h, right=right, key=h == "backend", priority=RUN_PRIORITY.get(h, 5))
            for h, right in COLUMNS]
    for key, group in by_dataset(runs).items():
        t = Listing(table_title(key, group), cols, name="runs")
        for r in group:
            cells = row_cells(r)
            t.add(*cells[:-1], status_cell(cells[-1]))
        t.notes = [[Styled("  " + backend, "bold"),
                    Styled(f" [{status}] ", STATUS_STYLE.get(status, "")), text]
                   for backend, status, text in notes(group)]
        out.append(t)
    summary = sweeps(runs)
    if summary:
        t = Listing(SWEEP_TITLE, [Column(h, right=right, key=h in ("database", "backend", "kind"),
                                         priority=0 if h.startswith("GCUPS") else 5)
                                  for h, right in SWEEP_COLUMNS], name="sweeps")
        for x in summary:
            t.add(*sweep_cells(x))
        out.append(t)
    return out


def pivot_listing(p, transpose: bool = False) -> Listing:
    """A pivot's rows x columns; ``transpose``: its columns (backends) as the rows, one column
    per row label (narrow terminals: long backend names read better down than across)."""
    if not transpose:
        t = Listing(p.title, [Column(h, key=True) for h in p.heads]
                    + [Column(p.label(c), right=True, priority=0, name_header=True)
                       for c in p.cols], name="pivot")
        for row in p.rows:                  # a data axis a run lacks: no cell text
            t.add(*("" if x == "None" else x for x in p.row_cells(row)))
        return t
    labels = [" ".join(x for x in p.lead(row) if x not in ("", "None")) for row in p.rows]
    t = Listing(p.title, [Column(p.by, key=True)]
                + [Column(label, right=True, priority=0, name_header=True)
                   for label in labels], name="pivot")
    for c in p.cols:
        t.add(p.label(c), *(p.cells.get((row, c), "") for row in p.rows))
    return t


def ratio_listing(ratios: dict, cells: list, apis: tuple) -> Listing:
    """Twin kernel-time ratios (:func:`hmmbench.summary.api_ratios`): a row per family."""
    num, den = apis
    t = Listing(f"Kernel time, {num} / {den} twin", [Column("family", key=True)]
                + [Column(c, right=True, priority=0, name_header=True) for c in cells],
                name="ratios")
    for family, row in ratios.items():
        t.add(family, *(f"{row[c]:.2f}" if c in row else "-" for c in cells))
    return t


def compare_listing(comp, baseline_name: str, candidate_name: str) -> Listing:
    """The gate's rows: times, change and verdict; then the count of other-hardware rows and
    PASS or FAIL."""
    with_axes = any(r.key[3] for r in comp.rows)
    keys = ("dataset", "backend", "chunking") + (("cell",) if with_axes else ())
    cols = [Column(k, key=True) for k in keys] + [
        Column("baseline", right=True, priority=1), Column("candidate", right=True, priority=1),
        Column("change", right=True, priority=0), Column("verdict", priority=0),
        Column("note", wrap=True, priority=2)]
    how = [f"max slowdown {comp.max_slowdown:g} %"]
    if comp.stage != "total":
        how.append(f"{comp.stage} stage")
    if comp.rounds:
        ran, planned = comp.rounds
        how.append(f"{ran} interleaved round(s)" + (f" of {planned}, the verdicts settled"
                                                    if ran < planned else ""))
    t = Listing(f"compare: {candidate_name} vs {baseline_name} ({', '.join(how)})", cols,
                name="compare")
    for r in comp.rows:
        style = "bold red" if r.failed else VERDICT_STYLE.get(r.verdict, "dim")
        t.add(*(str(k) for k in r.key[:len(keys)]), fmt_seconds(r.baseline_s),
              fmt_seconds(r.candidate_s),
              "-" if r.change_pct is None else f"{r.change_pct:+.1f} %",
              Styled(r.verdict, style), r.note or "")
    n_fail = sum(r.failed for r in comp.rows)
    n_hw = comp.not_comparable
    if n_hw:
        t.notes.append([Styled(f"{n_hw} run(s) not comparable (other hardware, clocks or data "
                               "bytes): ratios shown, not gated", "cyan")])
    t.notes.append([Styled(f"FAIL: {n_fail} run(s) failed the gate" if n_fail else "PASS",
                           "bold red" if n_fail else "bold green")])
    return t


def history_listings(hist, min_points: int = 2) -> list:
    """The files in order (with what changed), then the trend of every cell seen in several."""
    from ..history import trend_rows
    files = Listing("result files, oldest first (S: sources changed, D: devices changed)",
                    [Column("#", right=True, key=True), Column("created", priority=3),
                     Column("file", key=True), Column("sources", priority=2),
                     Column("version", priority=4), Column("devices", wrap=True, priority=1),
                     Column("changed", priority=0)], name="files")
    prev = None
    for s in hist.snapshots:
        changed = "" if prev is None else (("S" if s.sources and prev.sources and
                                            s.sources != prev.sources else "")
                                           + ("D" if s.devices != prev.devices else ""))
        files.add(str(s.index + 1), s.created, s.path, s.sources[:10] or "?", s.version,
                  ", ".join(s.devices), changed)
        prev = s
    rows = trend_rows(hist, min_points)
    with_axes = any(r["key"][3] for r in rows)
    keys = ("dataset", "backend", "chunking") + (("cell",) if with_axes else ())
    trend = Listing(f"per cell: GCUPS across the files (cells in {min_points}+ files; "
                    "marks: S/D/B@file: sources, device, data bytes changed)",
                    [Column(k, key=True) for k in keys]
                    + [Column("files", priority=3), Column("kernel trend", priority=2),
                       Column("first", right=True, priority=1),
                       Column("last", right=True, priority=0),
                       Column("change", right=True, priority=0),
                       Column("total trend", priority=2),
                       Column("total last", right=True, priority=0),
                       Column("marks", priority=1)], name="trends")
    for r in rows:
        trend.add(*(str(k) for k in r["key"][:len(keys)]),
                  ",".join(str(p.snapshot + 1) for p in r["points"]), r["spark_kernel"],
                  fmt_number(r["first"], 4), fmt_number(r["last"], 4),
                  "-" if r["change"] is None else f"{r['change']:+.1f} %", r["spark_total"],
                  fmt_number(r["total_last"], 4), r["marks"])
    if not rows:
        trend.notes.append([f"no cell appears in {min_points} or more files"])
    trend.notes += [[Styled(f"skipped {path}: {why}", "dim")] for path, why in hist.skipped]
    return [files, trend]


def scaling_listing(scaling) -> Listing:
    """A scaling study's rows (:class:`hmmbench.cluster.scaling.Scaling`), then the shards that
    re-ran elsewhere."""
    t = Listing(scaling.title, [Column("dataset", key=True), Column("backend", key=True),
                                Column("workers", right=True, key=True)]
                + [Column(h, right=True, priority=p) for h, p in (
                    ("total", 1), ("outside workers", 2), ("GCUPS total", 0),
                    ("GCUPS kernel", 0), ("efficiency", 0), ("eff. kernel", 1),
                    ("worker kernels", 3))], name="scaling")
    for row in scaling.rows:
        what = row["dataset"] + (f" × {row['model']} × {row['kind']}" if row.get("kind") else "")
        kernels = [w.get("kernel") for w in row.get("per_worker", [])]
        spread = (f"{fmt_seconds(min(kernels))} .. {fmt_seconds(max(kernels))}"
                  if kernels else "-")
        outside = row.get("outside_s")
        eff = ["no baseline" if row.get("baseline_workers") is None else fmt_number(row[k])
               for k in ("parallel_efficiency", "parallel_efficiency_kernel")]
        t.add(what, row["backend"], str(row["workers"]), fmt_seconds(row["total_s"]),
              "-" if outside is None else fmt_seconds(outside),
              fmt_number(row["gcups_total"]), fmt_number(row["gcups_kernel"]), *eff, spread)
    t.notes += [[note] for note in scaling.notes]
    t.notes += [[f"shard {x['shard']} of piece {x['piece']} ({x['dataset']}, {x['backend']}) "
                 f"re-ran on {x['ran_on']} ({x['host']}), planned on {x['planned']}"]
                for x in scaling.retried]
    return t
