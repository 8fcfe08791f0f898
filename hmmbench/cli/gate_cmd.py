"""``hmmbench gate``: the interleaved regression gate. Baseline and candidate ``hmmbench run``s
alternate, round after round (A B, B A, ...), each run writing ``<out>/round-NN.<side>.json``;
:mod:`hmmbench.rounds` judges the rounds (the interval of the median per-round time ratio
against the threshold, a sign test) and the rounds stop once every verdict is settled.

    hmmbench gate --out /tmp/gate --baseline-cmd '/ci/main/.venv/bin/hmmbench' \\
        -- -d 10s -b numpy-f32 -b opencl-inter-tile8
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .. import results, rounds
from ..backend import STAGES
from ..compare import check_stage
from ..errors import UserError
from ..fileio import output_folder
from .common import add_format_option, printer

SIDES = ("baseline", "candidate")
#: ``hmmbench run`` options the gate sets itself
OWN_RUN_OPTIONS = ("--json", "--resume", "--quiet", "-q")


def add_parser(sub) -> None:
    sp = sub.add_parser(
        "gate", help="regression gate by interleaved runs: baseline and candidate alternately",
        description="Runs `hmmbench run RUN-ARGS` with the baseline's and the candidate's "
                    "command alternately, round after round, and gates the candidate: a cell "
                    "is slower when the 96 % interval of its median round ratio lies beyond "
                    "--max-slowdown (8 of the default 9 rounds beyond it, every round at 6-8); "
                    "the rounds stop once the verdicts are settled. Exit 1 "
                    "when a cell is slower or a candidate result is wrong.",
        epilog="Example: hmmbench gate --out gate-1 --baseline-cmd '/ci/main/.venv/bin/hmmbench'"
               " -- -d 10s -b numpy-f32")
    sp.add_argument("--out", required=True, metavar="DIR",
                    help="folder of the rounds' result files (created; earlier round files in "
                         "it are refused, unless --judge)")
    for side in SIDES:
        sp.add_argument(f"--{side}-cmd", default="", metavar="CMD",
                        help=f"the {side}'s hmmbench command, e.g. '/ci/main/.venv/bin/hmmbench' "
                             f"(default: this hmmbench, '{_self_cmd()}')")
    sp.add_argument("--rounds", type=int, default=rounds.DEFAULT_ROUNDS, metavar="N",
                    help=f"rounds to run at most (default {rounds.DEFAULT_ROUNDS}, the fewest at "
                         f"which one contrary round changes no verdict; at least "
                         f"{rounds.MIN_ROUNDS}, the fewest that can show a change)")
    sp.add_argument("--all-rounds", action="store_true",
                    help="run every round even when the verdicts are settled")
    sp.add_argument("--judge", action="store_true",
                    help="run nothing: judge the round files already in --out")
    sp.add_argument("--max-slowdown", type=float, default=10.0, metavar="PCT",
                    help="fail a cell whose rounds show it more than PCT %% slower (default 10)")
    sp.add_argument("--stage", default="total", metavar="NAME",
                    help="the timed stage compared: total (default), or e.g. kernel")
    add_format_option(sp)
    sp.add_argument("run_args", nargs=argparse.REMAINDER, metavar="-- RUN-ARGS",
                    help="the `hmmbench run` arguments (datasets, backends, options)")
    sp.set_defaults(func=run, workload=None)


def _self_cmd() -> str:
    return shlex.join([Path(sys.executable).name, "-m", "hmmbench"])


def round_files(out: Path) -> list:
    """(baseline path, candidate path) of every complete round in ``out``, in order."""
    found = []
    for i in range(1, 10_000):
        pair = tuple(out / f"round-{i:02d}.{side}.json" for side in SIDES)
        if not all(p.exists() for p in pair):
            break
        found.append(pair)
    return found


def _command(text: str) -> list:
    try:
        cmd = shlex.split(text)
    except ValueError as exc:
        raise UserError(f"--baseline-cmd/--candidate-cmd {text!r}: {exc}") from None
    return cmd or [sys.executable, "-m", "hmmbench"]


def _run_one(cmd: list, run_args: list, path: Path, label: str) -> float:
    """One ``hmmbench run``; its failure is the gate's usage error (exit 2), naming the run."""
    argv = [*cmd, "run", *run_args, "--json", str(path), "--quiet"]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, errors="replace")
    except OSError as exc:
        raise UserError(f"{label}: cannot start {shlex.join(argv)}: {exc}") from None
    if done.returncode != 0 or not path.exists():
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"{label}: `{shlex.join(argv)}` failed (exit {done.returncode}): {last}")
    return time.perf_counter() - t0


def run(args, workload) -> int:
    if not 0 <= args.max_slowdown <= 1e6:
        raise UserError("--max-slowdown must be a percentage between 0 and 1e6")
    if not rounds.MIN_ROUNDS <= args.rounds <= 1000:
        raise UserError(f"--rounds must be between {rounds.MIN_ROUNDS} and 1000 (fewer rounds "
                        "cannot show a change)")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: is not a directory")
    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else list(args.run_args)
    if args.judge:
        paths = round_files(out)
        if not paths:
            raise UserError(f"{out}: no round files (round-01.baseline.json, "
                            "round-01.candidate.json, ...) to judge")
        docs = [tuple(results.load(p) for p in pair) for pair in paths]
        check_stage(args.stage, [doc for pair in docs for doc in pair])
    else:
        if args.stage not in ("total",) + STAGES:
            raise UserError(f"--stage '{args.stage}': hmmbench run times total, "
                            f"{', '.join(STAGES)}")
        docs = _run_rounds(args, out, run_args)
    comp = rounds.compare_rounds(docs, args.rounds, args.max_slowdown, args.stage)
    with printer(args.format) as shown:
        shown.print_compare(comp, f"{out}/round-*.baseline.json",
                            f"{out}/round-*.candidate.json")
    return comp.exit_code


def _run_rounds(args, out: Path, run_args: list) -> list:
    if not run_args:
        raise UserError("give the `hmmbench run` arguments after --, e.g. -- -d 10s -b numpy-f32")
    clash = [a for a in run_args if a.split("=")[0] in OWN_RUN_OPTIONS]
    if clash:
        raise UserError(f"{clash[0]}: the gate sets the runs' result files itself (--out)")
    output_folder(out, "--out")                # before any round: made now, or refused
    if any(out.glob("round-*.json")):
        raise UserError(f"{out}: holds round files of an earlier gate (--judge judges them; "
                        "give a new --out to run again)")
    cmds = {side: _command(getattr(args, f"{side}_cmd")) for side in SIDES}
    docs: list = []
    for i in range(1, args.rounds + 1):
        order = SIDES if i % 2 else SIDES[::-1]      # A B, B A, ...: drift falls on both
        took = {}
        for side in order:
            path = out / f"round-{i:02d}.{side}.json"
            took[side] = _run_one(cmds[side], run_args, path, f"round {i} {side}")
        docs.append(tuple(results.load(out / f"round-{i:02d}.{side}.json") for side in SIDES))
        print(f"gate: round {i}/{args.rounds}: " + ", ".join(
            f"{side} run {took[side]:.1f} s" for side in order), file=sys.stderr, flush=True)
        if not args.all_rounds and i < args.rounds and \
                rounds.settled(docs, args.rounds, args.max_slowdown, args.stage):
            print(f"gate: every verdict settled after {i} of {args.rounds} rounds",
                  file=sys.stderr, flush=True)
            break
    return docs
