"""``hmmbench compare``: the regression gate, candidate against baseline."""
from __future__ import annotations

from ..errors import UserError
from .common import add_format_option, printer


def add_parser(sub) -> None:
    sp = sub.add_parser("compare", help="regression gate: candidate vs baseline results")
    sp.add_argument("baseline")
    sp.add_argument("candidate")
    sp.add_argument("--max-slowdown", type=float, default=10.0, metavar="PCT",
                    help="fail when a run is more than PCT %% slower (default 10)")
    add_format_option(sp, help_extra=" (the verdicts as a pull-request comment or for a script)")
    sp.set_defaults(func=run, workload=None)


def run(args, workload) -> int:
    from .. import compare, results
    if not 0 <= args.max_slowdown <= 1e6:
        raise UserError("--max-slowdown must be a percentage between 0 and 1e6")
    base, cand = results.load(args.baseline), results.load(args.candidate)
    kinds = [{r["workload"] for r in doc["runs"]} for doc in (base, cand)]
    if kinds[0] and kinds[1] and not kinds[0] & kinds[1]:
        raise UserError(f"{args.candidate}: holds {', '.join(sorted(kinds[1]))} runs but the "
                        f"baseline {args.baseline} holds {', '.join(sorted(kinds[0]))} runs: "
                        "nothing to compare")
    comp = compare.compare(base, cand, args.max_slowdown)
    with printer(args.format) as out:
        out.print_compare(comp, str(args.baseline), str(args.candidate))
    return comp.exit_code
