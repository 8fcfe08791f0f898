"""The profile workload's end-to-end table from result files of the ``profile-e2e`` suite: per
database x model, the device pipeline's first search (the one-off database load + the cell's total)
and each further search (the cell's total) beside hmmsearch's total, the ratios, and whether the
pass counts agree; per filter kind, the cell's GCUPS total as a share of its kernel GCUPS.
``scripts/profile_e2e_table.py FILE...`` prints it.
"""
from __future__ import annotations

import json


def load_runs(paths: list) -> list:
    """Every run of the files, each tagged with its file (``_file``): a database load belongs to
    the run (process) that paid it."""
    runs = []
    for p in paths:
        with open(p) as fh:
            runs.extend(dict(r, _file=p) for r in json.load(fh)["runs"])
    return runs


def db_loads(runs: list) -> dict:
    """(file, database, backend) -> seconds of the one-off database load."""
    out = {}
    for r in runs:
        load = (r.get("info") or {}).get("db_load_s")
        if load:
            out[(r.get("_file"), r["dataset"], r["backend"])] = sum(load.values())
    return out


def pipeline_rows(runs: list, peer: str = "profile-hmmsearch") -> list:
    loads = db_loads(runs)
    cells = {(r["dataset"], r["model"], r["backend"]): r for r in runs
             if r.get("kind") == "pipeline" and (r.get("timing_s") or {}).get("total")}
    rows = []
    for (db, model, backend), r in cells.items():
        if backend == peer or r["status"] == "peer":
            continue
        ref = cells.get((db, model, peer))
        total = r["timing_s"]["total"]
        first = total + loads.get((r.get("_file"), db, backend), 0.0)
        theirs = ref["timing_s"]["total"] if ref else None
        ours_counts = (r.get("info") or {}).get("pass_counts")
        their_counts = (ref.get("info") or {}).get("pass_counts") if ref else None
        rows.append({"database": db, "model": model, "M": r.get("model_length"),
                     "backend": backend, "status": r["status"], "first_s": first,
                     "further_s": total, "hmmsearch_s": theirs,
                     "x_first": theirs / first if theirs else None,
                     "x_further": theirs / total if theirs else None,
                     "pass_counts": ours_counts,
                     "same_counts": (ours_counts == their_counts) if their_counts else None})
    return rows


def bar_rows(runs: list) -> list:
    """Per-cell GCUPS total / GCUPS kernel of the filter kinds (the >= 50 % bar at M >= 400)."""
    return [{"database": r["dataset"], "model": r["model"], "M": r.get("model_length"),
             "backend": r["backend"], "kind": r["kind"], "gcups_kernel": r["gcups_kernel"],
             "gcups_total": r["gcups_total"], "share": r["gcups_total"] / r["gcups_kernel"]}
            for r in runs if r.get("kind") in ("ssv", "msv", "vf") and r.get("gcups_kernel")
            and r.get("gcups_total") and r["status"] == "ok" and r.get("api") != "numpy"]


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)



def markdown(runs: list) -> str:
    """The two tables, as markdown."""
    lines = ["| database | model | M | backend | status | first search | each further | "
             "hmmsearch | x first | x further | pass counts msv/vit/fwd | same as hmmsearch |",
             "|---|---|---:|---|---|---:|---:|---:|---:|---:|---|---|"]
    for p in pipeline_rows(runs):
        c = p["pass_counts"] or {}
        lines.append(f"| {p['database']} | {p['model']} | {p['M']} | {p['backend']} | "
                     f"{p['status']} | {fmt(p['first_s'], '.3f')} s | "
                     f"{fmt(p['further_s'], '.3f')} s | {fmt(p['hmmsearch_s'], '.3f')} s | "
                     f"{fmt(p['x_first'], '.1f')} | {fmt(p['x_further'], '.1f')} | "
                     f"{c.get('msv')}/{c.get('vit')}/{c.get('fwd')} | {p['same_counts']} |")
    lines += ["", "| database | model | M | backend | kind | GCUPS kernel | GCUPS total | "
                  "total/kernel |", "|---|---|---:|---|---|---:|---:|---:|"]
    for b in bar_rows(runs):
        lines.append(f"| {b['database']} | {b['model']} | {b['M']} | {b['backend']} | "
                     f"{b['kind']} | {b['gcups_kernel']:.0f} | {b['gcups_total']:.0f} | "
                     f"{b['share']:.0%} |")
    return "\n".join(lines) + "\n"
