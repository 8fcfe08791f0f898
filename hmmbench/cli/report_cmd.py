"""``hmmbench report``: stored result files re-rendered by a printer (table, markdown, csv, json,
html; a pivot of one metric; plots and an HTML page beside them)."""
from __future__ import annotations

import sys

from .. import results
from ..errors import UserError
from ..fileio import check_output_path, same_path
from ..report.plots import plot_paths
from ..report import HtmlPrinter, Multiplex, make_pivot
from ..report.plot_printer import PlotPrinter
from ..report.versus import versus_listing
from ..summary import build_summary
from .common import add_format_option, printer, scaling_of

def add_parser(sub) -> None:
    sp = sub.add_parser("report", help="re-render stored result files")
    sp.add_argument("results", nargs="*")
    sp.add_argument("--summary", metavar="DIR", help="markdown tables of every result file "
                    "under DIR/<device>/*.json (hmmbench report --summary results/ > "
                    "results/SUMMARY.md)")
    sp.add_argument("--plot", metavar="PNG",
                    help="also write a GCUPS bar chart (matplotlib), and beside it PNG-peak "
                         "(GCUPS over L), PNG-stages (stage breakdown) and PNG-model-size where "
                         "the runs hold such data")
    sp.add_argument("--html", metavar="PAGE",
                    help="also write one self-contained HTML page (no network needed to open "
                         "it): tables, GCUPS and stage charts, peak and model-size curves, "
                         "CUDA-vs-OpenCL ratios, cross-check status, provenance")
    sp.add_argument("--quiet", "-q", action="store_true",
                    help="print nothing; only write the --html / --plot files")
    add_format_option(sp, default=None, help_extra=" (default: table; markdown for "
                      "--summary, as results/SUMMARY.md is)")
    sp.add_argument("--pivot", metavar="METRIC",
                    help="one table of METRIC, datasets x backends: gcups_kernel, gcups_total, "
                         "kernel, total or max_abs_err")
    sp.add_argument("--by", metavar="AXIS", default="backend",
                    help="the pivot's columns: backend (default), device, chunking, or any "
                         "backend parameter axis such as tile or block")
    sp.add_argument("--against", metavar="BACKEND",
                    help="every backend against BACKEND (a peer), kernel to kernel and end to "
                         "end, per cell of each file (ratios only inside one run)")
    sp.set_defaults(func=run, workload=None)


def run(args, workload) -> int:
    if args.summary:
        with printer(args.format or "markdown") as out:
            out.print_summary(build_summary(args.summary))
        return 0
    if not args.results:
        raise UserError("report needs result files (or --summary DIR)")
    if args.html:
        check_output_path(args.html, "--html", args.results)
    if args.plot:
        check_output_path(args.plot, "--plot", args.results)   # a folder: before its charts
        for path in plot_paths(args.plot):                    # and the charts beside it
            check_output_path(path, "--plot", args.results)
            if args.html and same_path(args.html, path):
                raise UserError(f"--html {args.html}: also a --plot output; give two paths")
    docs = [results.load(p) for p in args.results]
    shown = [] if args.quiet else [printer(args.format or "table")]
    files = []
    if args.html:
        files.append(HtmlPrinter(args.html))
    if args.plot:
        files.append(PlotPrinter(args.plot))
    if args.against:
        listings = [versus_listing(doc["runs"], args.against) for doc in docs]
        for p in shown:
            for path, listing in zip(args.results, listings):
                p.print_log(str(path), "bold")
                p.print_listing(listing)
            p.close()
        shown = []
    if args.pivot:
        # the pivot reads every file's runs as one table; the files' own pages and plots beside
        runs = [r for doc in docs for r in doc["runs"]]
        pivot = make_pivot(runs, args.pivot, args.by)
        for p in shown:
            p.print_pivot(pivot)
            p.close()
        shown = []
    with Multiplex(shown + files) as out:
        for path, doc in zip(args.results, docs):
            out.print_run(doc, path, scaling_of(doc))
    if args.html:
        print(f"html: {args.html}", file=sys.stderr)
    for p in files:
        for path in getattr(p, "written", []):
            print(f"plot: {path}", file=sys.stderr)
    return 0
