"""``hmmbench history``: each cell's GCUPS across result files, oldest first (table, plot)."""
from __future__ import annotations

import sys

from .. import history
from ..report.plots import plot_history
from ..errors import UserError
from ..fileio import check_output_path
from .common import add_format_option, printer


def add_parser(sub) -> None:
    sp = sub.add_parser("history", help="each cell's GCUPS trend across result files")
    sp.add_argument("results", nargs="*", default=["results"],
                    help="result files or directories searched for them (default: results)")
    sp.add_argument("--backend", "-b", metavar="GLOB", help="only backends matching GLOB")
    sp.add_argument("--dataset", "-d", metavar="GLOB", help="only datasets matching GLOB")
    sp.add_argument("--min-files", type=int, default=2, metavar="N",
                    help="show cells present in at least N files (default 2)")
    sp.add_argument("--plot", metavar="PNG",
                    help="also plot the trends of the cells with most points (matplotlib)")
    add_format_option(sp)
    sp.set_defaults(func=run, workload=None)


def run(args, workload) -> int:
    if args.min_files < 1:
        raise UserError("--min-files must be at least 1")
    if args.plot:
        check_output_path(args.plot, "--plot", history.result_files(args.results))
    hist = history.load_history(args.results, backend=args.backend, dataset=args.dataset)
    if not hist.snapshots:
        raise UserError(f"no result files under {', '.join(args.results)}")
    with printer(args.format) as out:
        out.print_history(hist, min_points=args.min_files)
    if args.plot:
        n = plot_history(hist, args.plot, min_points=args.min_files)
        print(f"plot: {args.plot} ({n} cells)", file=sys.stderr)
    return 0
