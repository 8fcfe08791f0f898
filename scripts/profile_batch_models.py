"""Is a batch of small models per launch faster (issue 14, --batch-models)? On the GPU machine:
the RREFam sweep (10 models, M = 83..138) on proteins-2e8, kinds ssv,msv, one `hmmbench run`
per K (default 1, 2, 4, 8: K = 1 is today's one model per cell), then a table of the sweep rows
per K (summed cells, kernel and total, aggregate GCUPS, speed-up over K = 1) in
$OUT/batch_models.md, and the runs' result files packed into ONE tarball
$OUT/batch_models.tar.gz (the machine returns at most 8 files).

    python3 scripts/profile_batch_models.py [--ks 1,2,4,8] [--database proteins-2e8]
        [--model RREFam] [--backend profile-cuda-warp] [--max-time 1] [--out DIR]

Run it after `source .device/env.sh` and the pyhmmer wheel set-up (bash
scripts/device_profile_e2e.sh batch does both). Each run is cross-checked against profile-numpy
like any run (a sampled check on proteins-2e8); a status other than ok is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hmmbench import report  # noqa: E402


def run_one(k: int, args, folder: str) -> str:
    """One `hmmbench run` of the sweep at --batch-models k; its result file."""
    path = os.path.join(folder, f"batch-models-{k}.json")
    cmd = [sys.executable, "-m", "hmmbench", "run", "--workload", "profile", "-d", args.database,
           "--model", args.model, "--kind", args.kinds, "-b", args.backend,
           "--batch-models", str(k), "--max-time", str(args.max_time), "--quiet", "--json", path]
    print("$", " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        print(f"batch-models {k}: exit {proc.returncode}", flush=True)
    return path


def table(paths: dict) -> list:
    """Markdown lines: one row per K x kind (the report's sweep rows), speed-up over K = 1."""
    rows, base = [], {}
    for k, path in sorted(paths.items()):
        if not os.path.exists(path):
            rows.append((k, None))
            continue
        with open(path) as f:
            runs = json.load(f)["runs"]
        bad = [(r["model"], r["kind"], r["status"], r.get("reason", "")) for r in runs
               if r["status"] != "ok"]
        for b in bad:
            print(f"batch-models {k}: {b}", flush=True)
        for s in report.sweeps(runs):
            rows.append((k, s))
            if k == 1:
                base[s["kind"]] = s
    out = ["| K | kind | models | cells | kernel | total | GCUPS kernel | GCUPS total | "
           "x kernel (K=1) | x total (K=1) |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k, s in rows:
        if s is None:
            out.append(f"| {k} | (no result) |||||||||")
            continue
        b = base.get(s["kind"])
        xk = f"{b['kernel_s'] / s['kernel_s']:.2f}" if b and s["kernel_s"] else "-"
        xt = f"{b['total_s'] / s['total_s']:.2f}" if b else "-"
        out.append(f"| {k} | {s['kind']} | {s['models']} | {s['cells']:.3g} | "
                   f"{s['kernel_s'] * 1e3:.2f} ms | {s['total_s'] * 1e3:.2f} ms | "
                   f"{s['gcups_kernel'] or 0:.4g} | {s['gcups_total']:.4g} | {xk} | {xt} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="1,2,4,8")
    ap.add_argument("--database", default="proteins-2e8")
    ap.add_argument("--model", default="RREFam")
    ap.add_argument("--kinds", default="ssv,msv")
    ap.add_argument("--backend", default="profile-cuda-warp")
    ap.add_argument("--max-time", type=float, default=1.0)
    ap.add_argument("--out", default=os.environ.get("OUT", "results/runs/batch-models"))
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        paths = {k: run_one(k, args, folder) for k in ks}
        lines = [f"RREFam-style sweep per --batch-models K: {args.model} on {args.database}, "
                 f"{args.backend}, kinds {args.kinds}", ""] + table(paths)
        with tarfile.open(os.path.join(args.out, "batch_models.tar.gz"), "w:gz") as tar:
            for p in paths.values():
                if os.path.exists(p):
                    tar.add(p, arcname=os.path.basename(p))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "batch_models.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
