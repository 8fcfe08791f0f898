"""``hmmbench suite list|run``: the named suites (:mod:`hmmbench.suites.catalog`), each step one
``hmmbench run`` through the same code path as the command typed by hand."""
from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import shlex
import sys
import time
import traceback
from typing import Callable

from .. import suites
from ..errors import UserError
from ..fileio import check_output_path, output_folder
from ..report import Column, Listing
from .common import terminal


def add_parser(sub, build_parser: Callable, main: Callable) -> None:
    """``hmmbench suite``; its steps are ``hmmbench run`` command lines, checked with the CLI's
    ``build_parser`` and run through its ``main`` (handed in: the CLI package imports this one)."""
    sp = sub.add_parser("suite", help="named benchmark suites (the device studies)")
    ssub = sp.add_subparsers(dest="suite_cmd", required=True, metavar="ACTION")
    ssub.add_parser("list", help="every suite, its steps and what it measures")
    rp = ssub.add_parser("run", help="run suites: one result file per step")
    rp.add_argument("names", nargs="+", metavar="NAME", help="suite names (see `suite list`)")
    rp.add_argument("--out", metavar="DIR",
                    help="folder of the result files, <DIR>/<step>.json (default: "
                         "results/runs/<suite>/)")
    rp.add_argument("--dry-run", action="store_true",
                    help="print the hmmbench run commands instead of running them")
    sp.set_defaults(func=functools.partial(run, build_parser=build_parser, main=main),
                    workload=None)


def run(args, workload, *, build_parser: Callable, main: Callable) -> int:
    if args.suite_cmd == "list":
        return _list(suites.every())
    chosen = [suites.get(n) for n in args.names]   # every name checked before anything runs
    plan = [(suite, step, suites.out_dir(suite, args.out)) for suite in chosen
            for step in suite.steps]
    _check_steps(plan, build_parser())
    if args.dry_run:
        for _, step, out_dir in plan:
            print(_shown(step, out_dir))
        return 0
    for _, step, out_dir in plan:        # a folder no result file can go to: before any step
        if step.writes:
            output_folder(out_dir, "--out")
            check_output_path(out_dir / f"{step.name}.json", "--out")
    return _run_steps(plan, main)


def _shown(step, out_dir) -> str:
    """A step as a shell line: its environment, then the hmmbench command."""
    env = [f"{k}={shlex.quote(str(v))}" for k, v in step.env.items()]
    return " ".join(env + [shlex.join(["hmmbench"] + step.argv(out_dir))])


def _list(every: list) -> int:
    t = Listing("suites (hmmbench suite run NAME [--dry-run])",
                [Column("name", key=True), Column("steps (result files)", wrap=True, priority=1),
                 Column("what it measures", wrap=True, priority=0)])
    for s in every:
        t.add(s.name, ", ".join(step.name for step in s.steps), s.about)
    terminal().print_listing(t)
    return 0


def _check_steps(plan: list, parser) -> None:
    """A step whose options `hmmbench run` would refuse is a usage error before any step runs."""
    for suite, step, out_dir in plan:
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said):
                parser.parse_args(step.argv(out_dir))
        except SystemExit:
            why = said.getvalue().strip().splitlines()[-1:] or ["bad options"]
            raise UserError(f"suite '{suite.name}' step '{step.name}': {why[0]}") from None


def _run_steps(plan: list, main: Callable) -> int:
    """Every step in order, like the study scripts: a failed step is reported and the next one
    still runs (each writes its own file, so a failure loses only itself)."""
    failed = []
    for i, (suite, step, out_dir) in enumerate(plan, 1):
        out_dir.mkdir(parents=True, exist_ok=True)
        argv = step.argv(out_dir)
        print(f"=== [{i}/{len(plan)}] {suite.name}/{step.name}: {_shown(step, out_dir)} "
              f"({time.strftime('%H:%M:%S', time.gmtime())} UTC)", file=sys.stderr, flush=True)
        environ = dict(os.environ)    # --opencl-device and env set variables: one step's only
        try:
            os.environ.update({k: str(v) for k, v in step.env.items()})
            code = main(argv)
        except Exception:  # noqa: BLE001 - a crashed step must not lose the steps after it
            traceback.print_exc()
            code = 1
        finally:
            os.environ.clear()
            os.environ.update(environ)
            gc.collect()
        expected = f" (expected {step.expect})" if step.expect else ""
        print(f"=== {suite.name}/{step.name}: exit {code}{expected}", file=sys.stderr,
              flush=True)
        if code == 130:                  # Ctrl-C stops the suite, not only its step
            raise KeyboardInterrupt(f"suite stopped in step {step.name}; the steps before it "
                                    "kept their files")
        if code != step.expect:
            failed.append(f"{step.name} (exit {code}{expected})")
    if failed:
        print(f"hmmbench: suite steps failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
