"""``hmmbench score``: one backend's values for every item of one dataset, to a file."""
from __future__ import annotations

import sys

from ..errors import UserError
from ..fileio import check_output_path
from ..options import score_options
from ..registry import probe, select
from .common import add_workload_options, given_files


def add_parser(sub, workloads) -> None:
    sp = sub.add_parser("score", help="write one log10 likelihood per pair, in dataset order "
                        "(profile workload: name, nats, bits per sequence of one model and kind)")
    sp.add_argument("--dataset", "-d", required=True)
    sp.add_argument("--backend", "-b", required=True)
    for w in workloads:
        w.add_arguments("score", sp)
    sp.add_argument("--output", "-o", required=True)
    sp.add_argument("--digits", type=int, default=6, help="decimals per value (default 6)")
    add_workload_options(sp)
    sp.set_defaults(func=run)


def run(args, workload) -> int:
    opts = score_options(vars(args), workload)
    check_output_path(opts.output, "--output", given_files(
        opts.dataset, getattr(opts.workload_options, "models", None)))
    backends = select([opts.backend], workload.name)
    if len(backends) != 1:
        raise UserError(f"--backend '{opts.backend}' matches {len(backends)} backends; "
                        "score needs exactly one")
    backend = backends[0]
    reason = probe(backend).reason
    if reason:
        raise UserError(f"backend '{backend.name}' is unavailable: {reason}")
    try:
        n = workload.score(opts, backend)
    finally:
        backend.close()
    print(f"{n} scores: {opts.output}", file=sys.stderr)
    return 0
