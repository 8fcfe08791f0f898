"""OpenCL kernel time / CUDA kernel time per family, from result files that ran both twins on the
same data (issue 4's table in results/README.md):

    python3 scripts/api_ratios.py results/h100/apis.json results/h100/apis-128x256.json

Rows: family (the backend name without its cuda-/opencl- prefix); columns: dataset [chunking].
"""
from __future__ import annotations

import json
import sys


def ratios(paths: list) -> tuple:
    kernel, columns = {}, []
    for path in paths:
        with open(path) as fh:
            doc = json.load(fh)
        for run in doc["runs"]:
            if run.get("status") != "ok" or not run.get("timing_s"):
                continue
            api, _, family = run["backend"].partition("-")
            column = f"{run['dataset']} {run['chunking']}"
            if column not in columns:
                columns.append(column)
            kernel[(api, family, column)] = run["timing_s"]["kernel"]
    families = sorted({f for api, f, _ in kernel if api == "cuda"
                       and any(a == "opencl" and g == f for a, g, _ in kernel)},
                      key=lambda f: (not f.startswith("inter"), f))
    table = {f: {c: kernel[("opencl", f, c)] / kernel[("cuda", f, c)]
                 for c in columns if ("opencl", f, c) in kernel and ("cuda", f, c) in kernel}
             for f in families}
    return table, columns


def main(paths: list) -> None:
    table, columns = ratios(paths)
    print("| family | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for family, row in table.items():
        print(f"| {family} | " + " | ".join(f"{row[c]:.2f}" if c in row else "-" for c in columns)
              + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
