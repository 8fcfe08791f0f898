"""How often the regression gate (``hmmbench gate``, interleaved rounds) is right on this machine.

Runs ``--pairs`` gates of each kind, the two kinds alternating, with the same code on both sides:

- ``same``: nothing else differs; every failed gate is a false alarm;
- ``slow``: while each candidate run lasts, one busy loop per CPU of ``--cpus`` is pinned beside
  it (``taskset``), busy ``--hog-duty`` of every 30 ms (2/3: about 1.5x slower); every passed
  gate is a missed slowdown.

Both sides run pinned to ``--cpus``. Beside it all, for the whole measurement, the script keeps
ONE other job running (``--background``): ``cpu``, a CPU-bound Python busy loop at normal
priority, not pinned (the "another job beside it" of a shared CI machine), or ``none``.

It writes a JSON summary (``--summary``, default docs/regression-gate-rates.json, which
docs/regression-gate.md cites): the rates, each gate's verdicts, median ratios and rounds, the
load average before and after every gate, what else ran (``--beside``), the host, the commit,
the commands, and the machine's own same-code spread: every same-code round ratio per backend,
the share beyond the threshold either way (q) and the false-alarm rate per cell that the
gate's rule gives at that q. The round files of every gate stay under ``--out`` (``hmmbench
gate --judge --out DIR`` judges one again).

    python scripts/gate_rates.py --pairs 20 --out /tmp/gate-rates \\
        --beside "other engineers' test runs" -- -d 10s -b numpy-f32 -b opencl-inter-tile8 \\
        --max-time 3
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOG_PERIOD_S = 0.03
#: A hog or the background job ends on its own after this long, whatever happens to this script.
HOG_LIMIT_S = 6 * 3600

HOG = """
import sys, time
duty, period, end = float(sys.argv[1]), float(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    t = time.monotonic()
    while time.monotonic() - t < duty * period:
        pass
    if duty < 1:
        time.sleep((1 - duty) * period)
"""
BACKGROUND = {"cpu": "one CPU-bound Python busy loop at normal priority, not pinned",
              "none": "nothing started (whatever else runs on the machine)"}


def start_hog(duty: float, cpu=None) -> subprocess.Popen:
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    return subprocess.Popen([*pin, sys.executable, "-c", HOG, str(duty), str(HOG_PERIOD_S),
                             str(HOG_LIMIT_S)])


def stop(procs: list) -> None:
    for p in procs:
        p.kill()
        p.wait()


def hogged(argv: list) -> int:
    """``hogged CPUS DUTY -- CMD...``: CMD with a busy loop pinned to each CPU, for as long as
    CMD runs (the slow side's --candidate-cmd; ``hmmbench gate`` appends the run's arguments)."""
    cpus, duty, cmd = argv[0].split(","), float(argv[1]), argv[3:]
    hogs = [start_hog(duty, c) for c in cpus]
    try:
        return subprocess.call(cmd)
    finally:
        stop(hogs)


def gate(args, kind: str, i: int, run_args: list) -> dict:
    """One ``hmmbench gate`` of ``kind``; its verdicts from the gate's JSON output, kept beside
    its round files (``gate.json``): a gate finished before is taken from there, a gate cut
    short is set aside (``<gate>.partial-N``) and run again."""
    out = args.out / f"{kind}-{i:03d}"
    record = out / "gate.json"
    if record.exists():
        return json.loads(record.read_text())
    if out.exists():
        out.rename(next(p for n in range(1, 1000)
                        if not (p := out.with_name(f"{out.name}.partial-{n}")).exists()))
    pinned = shlex.join(["taskset", "-c", args.cpus, sys.executable, "-m", "hmmbench"])
    cand = pinned if kind == "same" else shlex.join(
        [sys.executable, os.path.abspath(__file__), "hogged", args.cpus,
         f"{args.hog_duty:.4f}", "--"]) + " " + pinned
    cmd = [sys.executable, "-m", "hmmbench", "gate", "--out", str(out), "--format", "json",
           "--baseline-cmd", pinned, "--candidate-cmd", cand, *shlex.split(args.gate_args)]
    cmd += ["--", *run_args]
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    ran = subprocess.run(cmd, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"))
    if ran.returncode not in (0, 1):
        sys.exit(f"{shlex.join(cmd)} failed ({ran.returncode}):\n{ran.stderr[-2000:]}")
    verdict = json.loads(ran.stdout)
    done = {"gate": f"{kind}-{i:03d}", "kind": kind, "failed": ran.returncode == 1,
            "rounds": verdict["rounds"], "seconds": round(time.perf_counter() - t0, 1),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "rows": [{"backend": r["key"][1], "dataset": r["key"][0], "verdict": r["verdict"],
                      "ratio": None if r["change_pct"] is None
                      else round(1 + r["change_pct"] / 100, 4), "note": r["note"]}
                     for r in verdict["rows"]]}
    _write_json(record, done)
    return done


def summary(args, run_args: list, gates: list, started: str, wall: float) -> dict:
    out = {"what": "hmmbench gate's error rates on this machine (scripts/gate_rates.py)",
           "command": ["python", "scripts/gate_rates.py", *sys.argv[1:]],
           "created": started, "wall_s": round(wall), "pairs_planned": args.pairs,
           "pairs_run": len(gates) // 2, "run_args": run_args,
           "gate_args": args.gate_args or "(defaults)",
           "commit": args.commit,
           "background": f"{args.background}: {BACKGROUND[args.background]}",
           "beside": args.beside,
           "slowdown": f"one busy loop per CPU of {args.cpus} pinned beside each candidate run, "
                       f"busy {args.hog_duty:.3g} of every {HOG_PERIOD_S * 1000:.0f} ms",
           "cpus": args.cpus,
           "host": {"node": platform.node(), "cpu": _cpu_model(),
                    "logical_cpus": os.cpu_count(), "python": platform.python_version()}}
    for kind, want in (("same", "passed"), ("slow", "failed")):
        got = [g for g in gates if g["kind"] == kind]
        right = sum((not g["failed"]) if want == "passed" else g["failed"] for g in got)
        backends = sorted({r["backend"] for g in got for r in g["rows"]})
        out[kind] = {want: right, "of": len(got),
                     "median_ratio": {b: statistics.median(
                         [r["ratio"] for g in got for r in g["rows"]
                          if r["backend"] == b and r["ratio"]] or [0.0]) for b in backends},
                     "rounds_run": sum(g["rounds"][0] for g in got)}
    loads = [g["load_average_before"][0] for g in gates] + \
        [g["load_average_after"][0] for g in gates]
    out["load_average_1min"] = {"min": min(loads, default=None),
                                "max": max(loads, default=None)}
    out["same_code_spread"] = same_code_spread(args, gates)
    out["gates"] = gates
    return out


def same_code_spread(args, gates: list) -> dict:
    """The machine's own same-code spread: every round ratio of the same-code gates, per backend,
    and what the gate's rule makes of it (the share q of rounds beyond the threshold either way,
    and P(Binomial(planned, q) >= needed), the false-alarm rate per cell it implies)."""
    from hmmbench import results, rounds
    from hmmbench.cli.gate_cmd import round_files
    gate_opts = argparse.ArgumentParser(add_help=False)
    gate_opts.add_argument("--max-slowdown", type=float, default=10.0)
    gate_opts.add_argument("--rounds", type=int, default=rounds.DEFAULT_ROUNDS)
    gate_opts.add_argument("--stage", default="total")
    opts, _ = gate_opts.parse_known_args(shlex.split(args.gate_args))
    limit, need = 1 + opts.max_slowdown / 100, rounds.needed(opts.rounds)
    ratios: dict = {}
    for g in gates:
        if g["kind"] != "same":
            continue
        docs = [tuple(results.load(p) for p in pair)
                for pair in round_files(args.out / g["gate"])]
        for cell in rounds.cells(docs, opts.max_slowdown, opts.stage).values():
            ratios.setdefault(cell.key[1], []).extend(cell.ratios)
    out = {"threshold": limit, "rounds": opts.rounds, "needed": need}
    for backend, rs in sorted(ratios.items()):
        rs = sorted(rs)
        q = max(sum(r > limit for r in rs), sum(r < 1 / limit for r in rs)) / len(rs)
        out[backend] = {"round_ratios": [round(r, 4) for r in rs],
                        "q_beyond_threshold": round(q, 4),
                        "false_alarm_per_cell": float(f"{_tail(opts.rounds, need, q):.3g}")}
    return out


def _tail(n: int, k: int, q: float) -> float:
    """P(Binomial(n, q) >= k)."""
    return sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(k, n + 1))


def _write_json(path: Path, doc: dict) -> None:
    """``path`` whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hogged"]:
        return hogged(argv[1:])
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Arguments after -- go to `hmmbench run` (each gate's runs). Background job "
               "(--background cpu, the default): " + BACKGROUND["cpu"] + ". Slowdown: one busy "
               "loop per CPU pinned beside each slow candidate run.")
    p.add_argument("--pairs", type=int, default=20, help="gates of each kind (default 20)")
    p.add_argument("--out", type=Path, required=True,
                   help="folder of every gate's round files and record (a gate finished "
                        "there before is taken as it was, one cut short is run again)")
    p.add_argument("--summary", type=Path, default=REPO / "docs" / "regression-gate-rates.json",
                   help="the JSON summary to write (default docs/regression-gate-rates.json)")
    p.add_argument("--beside", default="nothing known",
                   help="what else ran on the machine meanwhile, in words, for the summary "
                        "(e.g. \"other engineers' test runs\")")
    p.add_argument("--cpus", default=",".join(map(str, sorted(os.sched_getaffinity(0)))),
                   help="CPUs both sides are pinned to, and the slow side's hogs (default: all)")
    p.add_argument("--hog-duty", type=float, default=2 / 3,
                   help="busy fraction of each hog (default 2/3: about 1.5x slower)")
    p.add_argument("--background", choices=sorted(BACKGROUND), default="cpu",
                   help="the one other job kept running beside the gates (default cpu: "
                        + BACKGROUND["cpu"] + ")")
    p.add_argument("--gate-args", default="", help="extra options of hmmbench gate")
    p.add_argument("--max-wall", type=float, default=0.0, metavar="S",
                   help="start no new pair after S seconds (default: no limit); the summary "
                        "says how many pairs ran")
    run_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if not 0 < args.hog_duty <= 1 or args.pairs < 1 or not args.cpus.strip():
        p.error("--hog-duty must be in (0, 1], --pairs at least 1, --cpus not empty")
    if not run_args:
        p.error("give the `hmmbench run` arguments after --")
    args.out.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    args.commit = _commit()     # before the summary (which may be in the tree) is rewritten
    t0 = time.perf_counter()
    background = [start_hog(1.0)] if args.background == "cpu" else []
    gates: list = []
    try:
        for i in range(args.pairs):
            if args.max_wall and time.perf_counter() - t0 > args.max_wall:
                print(f"--max-wall {args.max_wall:g} s passed: {i} of {args.pairs} pairs run",
                      flush=True)
                break
            for kind in ("same", "slow"):
                g = gate(args, kind, i, run_args)
                gates.append(g)
                print(f"{g['gate']}: {'FAIL' if g['failed'] else 'pass'} after "
                      f"{g['rounds'][0]} round(s), {g['seconds']:.0f} s; " + ", ".join(
                          f"{r['backend']} {r['ratio']}x {r['verdict']}" for r in g["rows"]),
                      flush=True)
            # after every pair, so that a measurement cut short still leaves its summary
            _write_json(args.summary, summary(args, run_args, gates, started,
                                              time.perf_counter() - t0))
    finally:
        stop(background)
    doc = summary(args, run_args, gates, started, time.perf_counter() - t0)
    _write_json(args.summary, doc)
    for kind, want in (("same", "passed"), ("slow", "failed")):
        print(f"{kind}: {doc[kind][want]}/{doc[kind]['of']} {want} (median candidate/baseline "
              f"ratio {doc[kind]['median_ratio']}; {doc[kind]['rounds_run']} rounds run)")
    for backend, spread in doc["same_code_spread"].items():
        if isinstance(spread, dict):
            print(f"same-code spread {backend}: q {spread['q_beyond_threshold']}, false alarm "
                  f"per cell {spread['false_alarm_per_cell']}")
    print(f"load average (1 min) {doc['load_average_1min']}; summary: {args.summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
