"""``hmmbench report``: stored result files re-rendered (table, markdown, csv, pivot, plot)."""
from __future__ import annotations

import sys

from ..errors import UserError
from .common import console


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
    sp.add_argument("--format", choices=("table", "markdown", "csv"), default="table",
                    help="table (rich, default), markdown (for results/README.md) or csv")
    sp.add_argument("--pivot", metavar="METRIC",
                    help="one table of METRIC, datasets x backends: gcups_kernel, gcups_total, "
                         "kernel, total or max_abs_err")
    sp.add_argument("--by", metavar="AXIS", default="backend",
                    help="the pivot's columns: backend (default), device, chunking, or any "
                         "backend parameter axis such as tile or block")
    sp.set_defaults(func=run, workload=None)


def run(args, workload) -> int:
    from .. import results
    if args.summary:
        from ..summary import summary_markdown
        sys.stdout.write(summary_markdown(args.summary))
        return 0
    if not args.results:
        raise UserError("report needs result files (or --summary DIR)")
    from ..cluster.scaling import render_cluster
    from ..fileio import check_output_path
    from ..report import csv_text, markdown, render
    for option, path in (("--plot", args.plot), ("--html", args.html)):
        if path:
            check_output_path(path, option)
    docs = [results.load(p) for p in args.results]
    runs = [r for doc in docs for r in doc["runs"]]
    if args.quiet:
        pass
    elif args.pivot:
        from ..report import pivot_markdown, pivot_table
        if args.format == "markdown":
            sys.stdout.write(pivot_markdown(runs, args.pivot, args.by))
        else:
            console().print(pivot_table(runs, args.pivot, by=args.by))
    elif args.format == "markdown":
        sys.stdout.write("\n".join(markdown(doc) for doc in docs))
    elif args.format == "csv":
        # One header for all files: the rows of every file, in order.
        sys.stdout.write(csv_text(runs))
    else:
        out = console()
        for path, doc in zip(args.results, docs):
            out.print(f"[bold]{path}[/bold]")
            render(doc, out)
            render_cluster(doc, out)
            if doc.get("not_run"):
                out.print(f"[yellow]{path}: an unfinished run: {len(doc['not_run'])} cells not "
                          f"run[/yellow] (hmmbench run with the same options and --resume "
                          f"{path} runs them)", highlight=False)
    if args.html:
        from ..html_report import write_html
        write_html(list(zip(args.results, docs)), args.html)
        print(f"html: {args.html}", file=sys.stderr)
    if args.plot:
        from ..plots import plot_all
        for path in plot_all(runs, args.plot):
            print(f"plot: {path}", file=sys.stderr)
    return 0
