"""How often the regression gate (``hmmbench compare``) is right on this machine.

Runs pairs of the same benchmark with the same code, baseline then candidate, and gates each
pair with ``hmmbench compare``:

- ``same`` pairs: nothing else changes; every failure is a false alarm;
- ``hog`` pairs: busy loops pinned to the candidate's CPUs, each busy for ``--hog-duty`` of
  every 30 ms, slow the candidate down (duty 2/3 on every CPU of the set: about 1.5x); every
  pass is a missed slowdown.

The two kinds alternate, so that whatever else loads the machine meanwhile falls on both.
Both runs of a pair are pinned to the same CPUs (``--cpus``, with ``taskset``). The result
files stay in ``--out`` (``--evaluate`` gates them again, e.g. with other ``--compare-args``).

    python scripts/gate_rates.py --pairs 20 --out /tmp/gate -- -d 10s -b numpy-f32 \\
        -b opencl-inter-tile8
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

HOG_PERIOD_S = 0.03
#: A hog ends on its own after this long, whatever happens to this script.
HOG_LIMIT_S = 900

HOG = """
import os, sys, time
duty, period, end = float(sys.argv[1]), float(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    t = time.monotonic()
    while time.monotonic() - t < duty * period:
        pass
    time.sleep((1 - duty) * period)
"""


def start_hogs(cpus: list, duty: float) -> list:
    return [subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", HOG, str(duty),
                              str(HOG_PERIOD_S), str(HOG_LIMIT_S)]) for c in cpus]


def stop(procs: list) -> None:
    for p in procs:
        p.kill()
        p.wait()


def run_once(run_args: list, cpus: list, out: Path, env: dict) -> float:
    cmd = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-m", "hmmbench", "run",
           *run_args, "--json", str(out), "--quiet"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"{shlex.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0


def collect(args, run_args: list) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "run_args.json").write_text(json.dumps(run_args))
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    for i in range(args.pairs):
        for kind in ("same", "hog"):
            stem = args.out / f"{kind}-{i:03d}"
            if (stem.with_suffix(".candidate.json")).exists():
                continue            # kept from an earlier, interrupted collection
            tb = run_once(run_args, args.cpus, stem.with_suffix(".baseline.json"), env)
            hogs = start_hogs(args.cpus, args.hog_duty) if kind == "hog" else []
            try:
                tc = run_once(run_args, args.cpus, stem.with_suffix(".candidate.json"), env)
            finally:
                stop(hogs)
            print(f"{kind} pair {i + 1}/{args.pairs}: {tb:.0f} s + {tc:.0f} s", flush=True)


def totals(path: Path) -> dict:
    doc = json.loads(path.read_text())
    return {(r["dataset"], r["backend"], r.get("chunking", "")): r["timing_s"].get("total")
            for r in doc["runs"] if r["status"] == "ok"}


def evaluate(args) -> int:
    rows = {"same": [], "hog": []}
    for base in sorted(args.out.glob("*.baseline.json")):
        kind = base.name.split("-")[0]
        cand = base.with_name(base.name.replace(".baseline.", ".candidate."))
        if kind not in rows or not cand.exists():
            continue
        cmd = [sys.executable, "-m", "hmmbench", "compare", str(base), str(cand),
               *shlex.split(args.compare_args)]
        done = subprocess.run(cmd, capture_output=True, text=True,
                              env=dict(os.environ, COLUMNS="200"))
        if done.returncode not in (0, 1):
            sys.exit(f"{shlex.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        b, c = totals(base), totals(cand)
        ratios = {k[1]: c[k] / b[k] for k in b if k in c and b[k] and c[k]}
        rows[kind].append((base.name.split(".")[0], done.returncode == 1, ratios))
    print(f"gate: hmmbench compare BASELINE CANDIDATE {args.compare_args}".rstrip())
    for kind, want in (("same", "pass"), ("hog", "fail")):
        got = rows[kind]
        if not got:
            continue
        n_fail = sum(f for _, f, _ in got)
        right = len(got) - n_fail if want == "pass" else n_fail
        backends = sorted({b for _, _, r in got for b in r})
        med = ", ".join(f"{b} {statistics.median(r[b] for _, _, r in got if b in r):.2f}x"
                        for b in backends)
        print(f"{kind}: {right}/{len(got)} {'passed' if want == 'pass' else 'failed'} "
              f"(should {want}); candidate/baseline median time: {med}")
        if kind == "same":
            drift = sorted(abs(x - 1.0) for _, _, r in got for x in r.values())
            print(f"  the machine's run-to-run noise: 95 % of the same-code ratios within "
                  f"{drift[min(len(drift) - 1, int(0.95 * len(drift)))] * 100:.0f} % of 1 "
                  "(a --noise-floor for hmmbench compare)")
        if args.verbose:
            for name, failed, ratios in got:
                print(f"  {name}: {'FAIL' if failed else 'pass'} " +
                      " ".join(f"{b} {x:.2f}x" for b, x in sorted(ratios.items())))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Arguments after -- go to `hmmbench run`.")
    p.add_argument("--pairs", type=int, default=20, help="pairs of each kind (default 20)")
    p.add_argument("--out", type=Path, required=True, help="folder of the result files")
    p.add_argument("--cpus", default=",".join(map(str, sorted(os.sched_getaffinity(0)))),
                   help="CPUs both runs of a pair are pinned to, and the hogs (default: all)")
    p.add_argument("--hog-duty", type=float, default=2 / 3,
                   help="busy fraction of each hog (default 2/3: about 1.5x slower)")
    p.add_argument("--compare-args", default="", help="extra options of hmmbench compare")
    p.add_argument("--evaluate", action="store_true",
                   help="only gate the pairs already in --out")
    p.add_argument("--verbose", "-v", action="store_true", help="one line per pair")
    argv = list(sys.argv[1:] if argv is None else argv)
    run_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.cpus = [int(c) for c in str(args.cpus).split(",") if c.strip()]
    if not 0 < args.hog_duty <= 1 or args.pairs < 1 or not args.cpus:
        p.error("--hog-duty must be in (0, 1], --pairs at least 1, --cpus not empty")
    if not args.evaluate:
        if not run_args:
            p.error("give the `hmmbench run` arguments after --")
        collect(args, run_args)
    return evaluate(args)


if __name__ == "__main__":
    sys.exit(main())
