"""Issue 14's end-to-end figures from result files of scripts/device_profile_e2e.sh: per
database x model, the device pipeline's first search (db load + cell total) and each further
search (cell total) next to hmmsearch's total, the ratio, and whether the pass counts agree;
per kind, the per-cell GCUPS total as a share of the kernel GCUPS (the resident-database bar).

    python3 scripts/profile_e2e_summary.py $OUT/e2e.json [more.json ...]
"""
from __future__ import annotations

import argparse
import json
import sys


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    runs = load_runs(args.files)
    print("| database | model | M | backend | status | first search | each further | "
          "hmmsearch | x first | x further | pass counts msv/vit/fwd | same as hmmsearch |")
    print("|---|---|---:|---|---|---:|---:|---:|---:|---:|---|---|")
    for p in pipeline_rows(runs):
        c = p["pass_counts"] or {}
        print(f"| {p['database']} | {p['model']} | {p['M']} | {p['backend']} | {p['status']} | "
              f"{fmt(p['first_s'], '.3f')} s | {fmt(p['further_s'], '.3f')} s | "
              f"{fmt(p['hmmsearch_s'], '.3f')} s | {fmt(p['x_first'], '.1f')} | "
              f"{fmt(p['x_further'], '.1f')} | {c.get('msv')}/{c.get('vit')}/{c.get('fwd')} | "
              f"{p['same_counts']} |")
    print()
    print("| database | model | M | backend | kind | GCUPS kernel | GCUPS total | total/kernel |")
    print("|---|---|---:|---|---|---:|---:|---:|")
    for b in bar_rows(runs):
        print(f"| {b['database']} | {b['model']} | {b['M']} | {b['backend']} | {b['kind']} | "
              f"{b['gcups_kernel']:.0f} | {b['gcups_total']:.0f} | {b['share']:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
