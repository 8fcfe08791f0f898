"""Result files into a pandas DataFrame: one row per run, then a pivot of the best kernel GCUPS.

    python examples/read_results_pandas.py                     # the committed results/h200/*.json
    python examples/read_results_pandas.py my-run.json --datasets tiny

A result file (``hmmbench run --json``) is one JSON document: provenance (``host``, ``devices``,
``command`` ...) and ``runs``, one object per dataset x backend x options with its stage times,
GCUPS, cross-check and ``status`` (ok, mismatch, error, unavailable ...). Its JSON Schema is
``hmmbench/schema/result.schema.json``.
"""
import argparse
import glob
import json
import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["dataset", "backend", "device", "gcups_kernel", "gcups_total", "status"]


def load_runs(paths) -> pd.DataFrame:
    """Every run of every file, one row each, with the file it came from."""
    rows = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        rows += [{"file": Path(path).name, **{c: run.get(c) for c in COLUMNS}}
                 for run in doc["runs"]]
    return pd.DataFrame(rows, columns=["file", *COLUMNS])


def main(argv=None) -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="result files (default: results/h200/*.json)")
    ap.add_argument("--datasets", default="tiny,10s,1m",
                    help="the pivot's columns, comma-separated (default: the shipped real sets)")
    args = ap.parse_args(argv)
    files = args.files or sorted(glob.glob(str(here / "results" / "h200" / "*.json")))
    if not files:
        ap.error("no result files given or found under results/h200/")

    runs = load_runs(files)
    print(f"{len(runs)} runs from {len(files)} files")
    print(runs["status"].value_counts().to_string(), end="\n\n")

    # Only runs whose results matched the reference count as speed; a backend measured several
    # times on one dataset (in several files or chunkings) shows its best.
    ok = runs[(runs["status"] == "ok") & runs["dataset"].isin(args.datasets.split(","))]
    pivot = ok.pivot_table(index="backend", columns="dataset", values="gcups_kernel",
                           aggfunc="max")
    order = [d for d in args.datasets.split(",") if d in pivot.columns]
    if order:                       # fastest first on the last (by default the largest) set
        pivot = pivot[order].sort_values(order[-1], ascending=False)
    print("best GCUPS (kernel) per backend and dataset")
    print(pivot.to_string(float_format=lambda v: f"{v:.3g}", na_rep="-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
