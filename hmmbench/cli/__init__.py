"""The ``hmmbench`` command: one module per subcommand, the workload-specific parts supplied by
the workload package (:class:`hmmbench.workload.Workload`).

    hmmbench list [--workload W]
    hmmbench run [--dataset D]... [--backend B]... [--chunking original|merged[:N]] [--repeat N]
                 [--max-time S] [--json PATH] [--workload pairhmm]
    hmmbench run --workload profile [-d DATABASE]... [--model M]... [--kind ssv,msv,vf,...]
    hmmbench run ... --cluster local|tcp://HOST:PORT [--fleet] [--workers 1,2,4]   (Dask)
    hmmbench score --dataset D --backend B --output PATH
    hmmbench run ... -b FAMILY --axis NAME=V1,V2 (sweep a parameter axis)
    hmmbench report RESULTS.json... [--plot PNG] [--html PAGE] [--pivot METRIC --by AXIS]
    hmmbench compare BASELINE.json CANDIDATE.json [--max-slowdown PCT] [--stage kernel]
    hmmbench gate --out DIR [--baseline-cmd CMD] [--candidate-cmd CMD] -- RUN-ARGS  (interleaved)
    hmmbench history [RESULTS...] [--plot PNG]
    hmmbench datasets list [--workload profile] | fetch NAME
    hmmbench suite list | run NAME... [--out DIR] [--dry-run]

Every user mistake (bad input file, unknown name, bad option value) ends as one line on stderr,
``hmmbench: error: <message>``, exit status 2, and no output file. Anything else that goes wrong
(a bug, a backend failing under ``score``) ends as one line too, exit status 3, pointing at
``--debug``, which shows the traceback. (1 is ``compare``'s or ``gate``'s failed gate; 130 an
interrupt.)
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from .. import __version__
from .. import workload, workload as workloads
from ..errors import UserError
from . import (compare_cmd, datasets_cmd, gate_cmd, history_cmd, list_cmd, report_cmd,
               run_cmd, score_cmd, suite_cmd)
from .common import select_opencl_device


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the message and where to look), exit 2."""

    def error(self, message):
        self.exit(2, f"hmmbench: error: {message} (see '{self.prog} --help')\n")


#: Exit status of an unexpected failure (not the user's mistake, 2; not compare's failed gate, 1).
EXIT_UNEXPECTED = 3
#: ``--debug`` anywhere (before or after the subcommand): show tracebacks of unexpected errors.
DEBUG_HELP = "show the Python traceback of an unexpected error instead of one line"
#: ``--verbose`` anywhere: show the OpenCL compilers' build logs (silent by default).
VERBOSE_HELP = "show the OpenCL compilers' build logs (warnings and remarks)"


def build_parser() -> argparse.ArgumentParser:
    workloads = workload.every()
    p = OneLineParser(prog="hmmbench", description=(
        "Benchmark GPU/CPU strategies for the HMM dynamic programs of genomics (GATK Pair-HMM "
        "forward, HMMER3 profile search), cross-checked against a float64 reference."))
    p.add_argument("--version", action="version", version=f"hmmbench {__version__}")
    p.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    p.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    list_cmd.add_parser(sub)
    run_cmd.add_parser(sub, workloads)
    score_cmd.add_parser(sub, workloads)
    report_cmd.add_parser(sub)
    compare_cmd.add_parser(sub)
    gate_cmd.add_parser(sub)
    history_cmd.add_parser(sub)
    datasets_cmd.add_parser(sub)
    suite_cmd.add_parser(sub, build_parser, main)
    for sp in sub.choices.values():
        # SUPPRESS: a subcommand without --debug leaves the global one as it was.
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=DEBUG_HELP)
        sp.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                        help=VERBOSE_HELP)
    return p


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args.verbose:
        os.environ["PYOPENCL_COMPILER_OUTPUT"] = "1"   # read by hmmbench.apis.opencl and pyopencl
    try:
        return _dispatch(args)
    except UserError as exc:
        print(f"hmmbench: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"hmmbench: interrupted{': ' + one_line(str(exc)) if str(exc) else ''}",
              file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the guard: no path of the CLI ends in a traceback
        if args.debug:
            raise
        text = one_line(" ".join(str(exc).split())) or "no message"
        print(f"hmmbench: error: unexpected {type(exc).__name__}: {text} (a bug? run again "
              f"with --debug for the traceback)", file=sys.stderr)
        return EXIT_UNEXPECTED


def one_line(text: str) -> str:
    """A message as one line: line breaks in it (a file name, a foreign message) escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _dispatch(args) -> int:
    workload = None
    if getattr(args, "workload", None) is not None or args.command in ("list", "run",
                                                                      "score", "datasets"):
        workload = workloads.get(getattr(args, "workload", None))
        foreign = workloads.foreign_option(vars(args), workload)
        if foreign:
            raise UserError(foreign)
    if getattr(args, "opencl_device", None):
        select_opencl_device(args.opencl_device)
    return int(args.func(args, workload) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
