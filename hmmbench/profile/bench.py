"""Retired: profile timings come from the runner. This module only forwards to it.

    python3 -m hmmbench.profile.bench [--model PF02826] [--kinds ssv,msv,vf] [--db proteome]
        [--repeat R] [--json PATH]

is ``hmmbench run --workload profile -d DB --model MODEL --kind KINDS [--repeat R] [--json PATH]``
(every available backend per kind, cross-checked against profile-numpy, plus the whole-pipeline
peers pyhmmer Pipeline and hmmsearch as peer rows).
"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from hmmbench import cli
    ap = argparse.ArgumentParser(description="forwards to hmmbench run --workload profile")
    ap.add_argument("--model", default="PF02826")
    ap.add_argument("--kinds", default="ssv,msv,vf")
    ap.add_argument("--db", default="proteome")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    model = args.model[:-4] if args.model.endswith(".hmm") else args.model
    run = ["run", "--workload", "profile", "-d", args.db, "--model", model, "--kind", args.kinds]
    if "pipeline" not in args.kinds.split(","):
        run += ["--kind", "pipeline"]      # the peers, as the old script timed them
    if args.repeat:
        run += ["--repeat", str(args.repeat)]
    if args.json:
        run += ["--json", args.json]
    print("hmmbench " + " ".join(run), file=sys.stderr)
    return cli.main(run)


if __name__ == "__main__":
    sys.exit(main())
