"""``hmmbench compare``: the regression gate, candidate against baseline."""
from __future__ import annotations

from .. import compare, results
from ..errors import UserError
from .common import add_format_option, printer


def add_parser(sub) -> None:
    sp = sub.add_parser("compare", help="regression gate: candidate vs baseline results")
    sp.add_argument("baseline")
    sp.add_argument("candidate")
    sp.add_argument("--max-slowdown", type=float, default=10.0, metavar="PCT",
                    help="fail when a run is more than PCT %% slower (default 10) and the "
                         "noise cannot explain it")
    sp.add_argument("--noise-floor", type=float, default=0.0, metavar="PCT",
                    help="this machine's run-to-run noise in percent, which one run's passes do "
                         "not show: a change must pass the threshold widened by it (default 0: "
                         "the baseline's own spread only; scripts/gate_rates.py measures it)")
    sp.add_argument("--stage", default="total", metavar="NAME",
                    help="the timed stage compared: total (default), or e.g. kernel (a GPU "
                         "kernel's own time)")
    add_format_option(sp, help_extra=" (the verdicts as a pull-request comment or for a script)")
    sp.set_defaults(func=run, workload=None)


def run(args, workload) -> int:
    for flag, value in (("--max-slowdown", args.max_slowdown),
                        ("--noise-floor", args.noise_floor)):
        if not 0 <= value <= 1e6:
            raise UserError(f"{flag} must be a percentage between 0 and 1e6")
    base, cand = results.load(args.baseline), results.load(args.candidate)
    kinds = [{r["workload"] for r in doc["runs"]} for doc in (base, cand)]
    if kinds[0] and kinds[1] and not kinds[0] & kinds[1]:
        raise UserError(f"{args.candidate}: holds {', '.join(sorted(kinds[1]))} runs but the "
                        f"baseline {args.baseline} holds {', '.join(sorted(kinds[0]))} runs: "
                        "nothing to compare")
    compare.check_stage(args.stage, [base, cand])
    comp = compare.compare(base, cand, args.max_slowdown, args.noise_floor, args.stage)
    with printer(args.format) as out:
        out.print_compare(comp, str(args.baseline), str(args.candidate))
    return comp.exit_code
