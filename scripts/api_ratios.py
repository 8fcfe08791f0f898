"""OpenCL kernel time / CUDA kernel time per family, from result files that ran both twins on the
same data (issue 4's table in results/README.md):

    python3 scripts/api_ratios.py [--float32-pass] results/h200/session3-apis-*.json

Rows: family (the backend name without its cuda-/opencl- prefix); columns: dataset [chunking].

The kernel stage as the tool reports it is not the same work in the two APIs when some pairs
fall back to float64 (1m has 13): the OpenCL families recompute them with their float64 kernel on
the device, inside the kernel stage (`info.fallback_seconds` holds that part), while the CUDA Ren
families hand them to the CPU reference, outside every device stage. ``--float32-pass`` compares
the float32 launches alone: OpenCL's kernel time minus its fallback kernels.
"""
from __future__ import annotations

import json
import sys


def kernel_seconds(run: dict, float32_pass: bool) -> float:
    seconds = run["timing_s"]["kernel"]
    if float32_pass:
        seconds -= (run.get("info", {}).get("fallback_seconds") or {}).get("kernel", 0.0)
    return seconds


def ratios(paths: list, float32_pass: bool = False) -> tuple:
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
            kernel[(api, family, column)] = kernel_seconds(run, float32_pass)
    families = sorted({f for api, f, _ in kernel if api == "cuda"
                       and any(a == "opencl" and g == f for a, g, _ in kernel)},
                      key=lambda f: (not f.startswith("inter"), f))
    table = {f: {c: kernel[("opencl", f, c)] / kernel[("cuda", f, c)]
                 for c in columns if ("opencl", f, c) in kernel and ("cuda", f, c) in kernel}
             for f in families}
    return table, columns


def main(args: list) -> None:
    float32_pass = "--float32-pass" in args
    table, columns = ratios([a for a in args if a != "--float32-pass"], float32_pass)
    print("| family | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for family, row in table.items():
        print(f"| {family} | " + " | ".join(f"{row[c]:.2f}" if c in row else "-" for c in columns)
              + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
