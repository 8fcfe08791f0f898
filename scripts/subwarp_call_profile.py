"""Where a ``cuda-subwarp`` call's host time goes on the GPU machine: warm calls of a set (the
real driver), then a cProfile of ``--calls`` more, by own time (driver calls show as PyCUDA's
functions). Whole sets, or ``1m-merged`` = 1m as one call (what ``--chunking merged`` runs).

    HMMBENCH_DATA_PATH=... python3 scripts/subwarp_call_profile.py --sets 1m,10s [--calls 200]
        [--setting NAME=VALUE] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from probe_profile import profile_calls  # scripts/, beside this file
from subwarp_side_bins import sets  # scripts/, beside this file

from hmmbench.pairhmm import cuda_subwarp_variants as swv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="1m,10s")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--lines", type=int, default=30)
    ap.add_argument("--setting", action="append", default=[],
                    help="NAME=VALUE: a backend attribute (an integer) set first")
    ap.add_argument("--json")
    args = ap.parse_args()
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    for setting in args.setting:
        name, value = setting.split("=")
        if not hasattr(b, name):
            ap.error(f"--setting {name}: cuda-subwarp has no such attribute")
        setattr(b, name, int(value))
    out = {"gpu": b.device_name(), "settings": args.setting, "calls": args.calls, "sets": {}}
    for label, ps in sets(args.sets.split(",")).items():
        for _ in range(20):
            b.run(ps)
        walls = []
        for _ in range(args.calls):
            t0 = time.perf_counter()
            b.run(ps)
            walls.append(time.perf_counter() - t0)
        text = profile_calls(b.run, [ps] * args.calls, args.lines)
        med = statistics.median(walls)
        out["sets"][label] = {"pairs": ps.n_pairs, "wall_median_s": med,
                              "wall_min_s": min(walls), "profile": text}
        print(f"{label}: {ps.n_pairs} pairs, wall median {med * 1e6:.0f} us (min "
              f"{min(walls) * 1e6:.0f}); profile of {args.calls} calls:\n{text}", flush=True)
    b.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
