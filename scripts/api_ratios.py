"""OpenCL kernel time / CUDA kernel time per family, from result files that ran both twins on the
same data (issue 4's table; ``hmmbench report --summary`` prints it per file):

    python3 scripts/api_ratios.py [--float32-pass] results/h200/session3-apis-*.json

Rows: family (the backend name without its API token); columns: dataset [chunking], across the
files given.

The kernel stage as the tool reports it is not the same work in the two APIs when some pairs
fall back to float64 (1m has 13) and the files predate commit 0fac469: the OpenCL families
recomputed them with their float64 kernel on the device, inside the kernel stage
(`info.fallback_seconds` holds that part), while the CUDA Ren families handed them to the CPU
reference, outside every device stage. ``--float32-pass`` compares the float32 launches alone:
each kernel time minus its fallback kernels.
"""
from __future__ import annotations

import sys

from hmmbench import results
from hmmbench.summary import api_ratios, ratio_markdown


def main(args: list) -> None:
    float32_pass = "--float32-pass" in args
    runs = [r for path in args if path != "--float32-pass" for r in results.load(path)["runs"]]
    table, cells, _ = api_ratios(runs, float32_pass)
    sys.stdout.write(ratio_markdown(table, cells))


if __name__ == "__main__":
    main(sys.argv[1:])
