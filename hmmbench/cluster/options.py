"""``hmmbench run``'s cluster options (no Dask import: the default run stays embedded)."""
from __future__ import annotations

from ..errors import UserError

FLEET_ORDERS = ("at-once", "in-turn")
RESTARTS = ("auto", "always", "never")


def add_arguments(parser) -> None:
    g = parser.add_argument_group("cluster (Dask; pip install 'hmmbench[dask]')")
    g.add_argument("--cluster", metavar="local|tcp://HOST:PORT", default=None,
                   help="run on a Dask cluster: 'local' starts one worker per GPU (dask-cuda), "
                        "else worker processes for the CPU backends; an address uses a running "
                        "scheduler (several hosts). Default: shard each dataset over the workers")
    g.add_argument("--fleet", nargs="?", const="at-once", choices=FLEET_ORDERS, default=None,
                   help="fleet mode: the same benchmark on every worker (at-once, the default, "
                        "or in-turn), one row per worker per cell")
    g.add_argument("--workers", metavar="N[,N...]", default=None,
                   help="shard mode: worker counts of a scaling study, e.g. 1,2,4 (default: all "
                        "workers); fleet mode: how many workers (one count)")
    g.add_argument("--shards-per-worker", type=int, default=None, metavar="K",
                   help="shard mode: cut each piece into K shards per worker, run as separate "
                        "tasks, so that one shard's results travel back while the next one "
                        "computes (default 1)")
    g.add_argument("--dask-batching", action="store_true", default=None,
                   help="shard mode: keep Dask's batching of control messages (each waits up to "
                        "2-10 ms for more to send with it); by default they go at once, since a "
                        "sharded call is a few messages each way")
    g.add_argument("--restart-workers", choices=RESTARTS, default=None,
                   help="shard mode's scaling study: restart the workers before every row after "
                        "the first, so that no row runs on workers the rows before it used "
                        "(auto, the default: on a --cluster local only; always; never)")
    g.add_argument("--cluster-timeout", type=float, default=None, metavar="S",
                   help="seconds to wait for the scheduler and its workers (default 30)")


def check(args) -> None:
    """Cluster options without --cluster, or a bad timeout, are usage errors."""
    if args.cluster is None:
        for flag, value in (("--fleet", args.fleet), ("--workers", args.workers),
                            ("--cluster-timeout", args.cluster_timeout),
                            ("--shards-per-worker", args.shards_per_worker),
                            ("--dask-batching", args.dask_batching),
                            ("--restart-workers", args.restart_workers)):
            if value is not None:
                raise UserError(f"{flag} needs --cluster local or --cluster tcp://HOST:PORT")
    if args.cluster_timeout is not None and not 0 < args.cluster_timeout <= 86_400:
        raise UserError("--cluster-timeout must be above 0 and at most 86400 seconds")
    if args.shards_per_worker is not None and args.shards_per_worker < 1:
        raise UserError("--shards-per-worker must be at least 1")
    for flag, value in (("--shards-per-worker", args.shards_per_worker),
                        ("--dask-batching", args.dask_batching),
                        ("--restart-workers", args.restart_workers)):
        if args.fleet and value is not None:
            raise UserError(f"{flag} applies to shard mode, not --fleet")
