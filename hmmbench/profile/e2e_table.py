"""The profile workload's end-to-end table from result files of the ``profile-e2e`` and
``profile-many`` suites: a many-model search summed (the database loaded once, every model's
pipeline, beside hmmsearch on the same models); per database x model, the device pipeline's first search (the one-off database load + the cell's total)
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
                     "backend": backend, "status": r["status"], "_file": r.get("_file"),
                     "cells": r.get("cells") or 0, "gcups_total": r.get("gcups_total"),
                     "first_s": first,
                     "further_s": total, "hmmsearch_s": theirs,
                     "x_first": theirs / first if theirs else None,
                     "x_further": theirs / total if theirs else None,
                     "pass_counts": ours_counts,
                     "same_counts": (ours_counts == their_counts) if their_counts else None})
    return rows


def sweep_rows(runs: list, peer: str = "profile-hmmsearch") -> list:
    """Per result file x database x backend with several models: the whole search as a user
    runs it -- the database loaded once, then every model's pipeline (the sum of the cells'
    totals) -- beside the peer's sum over the same models, the aggregate GCUPS (summed M x
    residues over that time) and on how many models the pass counts are identical."""
    loads = db_loads(runs)
    groups: dict = {}
    for p in pipeline_rows(runs, peer):
        groups.setdefault((p["_file"], p["database"], p["backend"]), []).append(p)
    out = []
    for (path, db, backend), rows in groups.items():
        if len(rows) < 2:
            continue
        load = loads.get((path, db, backend), 0.0)
        total = sum(p["further_s"] for p in rows)
        theirs = (sum(p["hmmsearch_s"] for p in rows)
                  if all(p["hmmsearch_s"] for p in rows) else None)
        cells = sum(p["cells"] for p in rows)
        Ms = [p["M"] for p in rows if p["M"]]
        out.append({"database": db, "backend": backend, "models": len(rows),
                    "M_range": (min(Ms), max(Ms)) if Ms else None, "db_load_s": load,
                    "first_s": load + total, "hmmsearch_s": theirs,
                    "x_first": theirs / (load + total) if theirs else None,
                    "gcups_first": cells / (load + total) / 1e9 if total else None,
                    "same_counts": sum(p["same_counts"] is True for p in rows),
                    "compared": sum(p["same_counts"] is not None for p in rows)})
    return out


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
    lines = []
    sweeps = sweep_rows(runs)
    if sweeps:
        lines += ["| database | backend | models | M | db load | whole search | hmmsearch | "
                  "x hmmsearch | GCUPS | pass counts as hmmsearch |",
                  "|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
        for w in sweeps:
            span = "-" if w["M_range"] is None else f"{w['M_range'][0]}..{w['M_range'][1]}"
            lines.append(f"| {w['database']} | {w['backend']} | {w['models']} | {span} | "
                         f"{fmt(w['db_load_s'], '.3f')} s | {fmt(w['first_s'], '.2f')} s | "
                         f"{fmt(w['hmmsearch_s'], '.1f')} s | {fmt(w['x_first'], '.1f')} | "
                         f"{fmt(w['gcups_first'], '.0f')} | "
                         f"{w['same_counts']} of {w['compared']} models |")
        lines.append("")
    lines += ["| database | model | M | backend | status | first search | each further | "
              "hmmsearch | x first | x further | GCUPS | pass counts msv/vit/fwd | "
              "same as hmmsearch |",
              "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for p in pipeline_rows(runs):
        c = p["pass_counts"] or {}
        lines.append(f"| {p['database']} | {p['model']} | {p['M']} | {p['backend']} | "
                     f"{p['status']} | {fmt(p['first_s'], '.3f')} s | "
                     f"{fmt(p['further_s'], '.3f')} s | {fmt(p['hmmsearch_s'], '.3f')} s | "
                     f"{fmt(p['x_first'], '.1f')} | {fmt(p['x_further'], '.1f')} | "
                     f"{fmt(p['gcups_total'], '.0f')} | "
                     f"{c.get('msv')}/{c.get('vit')}/{c.get('fwd')} | {p['same_counts']} |")
    lines += ["", "| database | model | M | backend | kind | GCUPS kernel | GCUPS total | "
                  "total/kernel |", "|---|---|---:|---|---|---:|---:|---:|"]
    for b in bar_rows(runs):
        lines.append(f"| {b['database']} | {b['model']} | {b['M']} | {b['backend']} | "
                     f"{b['kind']} | {b['gcups_kernel']:.0f} | {b['gcups_total']:.0f} | "
                     f"{b['share']:.0%} |")
    return "\n".join(lines) + "\n"
