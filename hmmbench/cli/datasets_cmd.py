"""``hmmbench datasets list|fetch``: a workload's catalog, and downloads of real sets."""
from __future__ import annotations

from .common import terminal


def add_parser(sub) -> None:
    sp = sub.add_parser("datasets", help="dataset catalog and downloads")
    dsub = sp.add_subparsers(dest="datasets_cmd", required=True, metavar="ACTION")
    lp = dsub.add_parser("list", help="every known dataset")
    lp.add_argument("--workload", default="pairhmm",
                    help="pairhmm (default) or profile (sequence databases and models)")
    f = dsub.add_parser("fetch", help="where a real dataset is, else download it into the "
                                      "user cache")
    f.add_argument("name")
    sp.set_defaults(func=run)


def run(args, workload) -> int:
    if args.datasets_cmd == "fetch":
        path = workload.fetch(args.name)
        print(f"{args.name}: {path}")
        return 0
    out = terminal()
    for table in workload.catalog_tables():
        out.print_listing(table)
    return 0
