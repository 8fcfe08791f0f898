"""The head A/Bs of session 15 in one small file (issue 13 point 4): per timeline JSON written by
``subwarp_pipeline_timeline.py`` (``device_head.sh``), per value of its setting the calls' wall,
kernel and GPU-span times, the main thread's wait for staging, and when the first chunk's kernels
began (ms after the call's start event), each with its median.

    python scripts/subwarp_head_summary.py TIMELINE.json... --label L... --json OUT
"""
from __future__ import annotations

import argparse
import json
import statistics


def summary(tl: dict) -> dict:
    """One timeline file's rows and medians per setting value."""
    name = tl["setting"]
    rows: dict = {}
    for run in tl["runs"]:
        rows.setdefault(str(run.get(name)), []).append({
            "round": run["round"], "wall_ms": run["wall_ms"], "kernel_ms": run["kernel_ms"],
            "gpu_span_ms": run["gpu_span_ms"], "prep_wait_ms": run["prep_wait_ms"],
            "first_kernel_ms": run["chunks"][0]["kernels"][0]})
    return {"gpu": tl["gpu"], "set": tl["set"], "piece": tl["piece"], "pairs": tl["pairs"],
            "setting": name, "fixed": tl.get("fixed", {}),
            "values": {v: {"median_wall_ms": statistics.median(r["wall_ms"] for r in rs),
                           "median_kernel_ms": statistics.median(r["kernel_ms"] for r in rs),
                           "rounds": rs} for v, rs in rows.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timelines", nargs="+")
    ap.add_argument("--label", nargs="+", required=True, help="one per timeline file")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if len(args.label) != len(args.timelines):
        ap.error("one --label per timeline file")
    out = {}
    for label, path in zip(args.label, args.timelines):
        with open(path) as f:
            out[label] = summary(json.load(f))
        for v, row in out[label]["values"].items():
            print(f"{label}: {out[label]['setting']}={v} wall {row['median_wall_ms']:.2f} ms "
                  f"kernel {row['median_kernel_ms']:.2f} ms ({len(row['rounds'])} rounds)")
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
