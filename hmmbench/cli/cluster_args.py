"""``hmmbench run``'s cluster flags, and the one place that turns them into
:class:`hmmbench.cluster.options.ClusterOptions` (no Dask import)."""
from __future__ import annotations

from typing import Optional

from ..cluster.connect import check_address
from ..cluster.options import DEFAULT_TIMEOUT, FLEET_ORDERS, GATHERS, RESTARTS, \
    ClusterOptions, parse_counts
from ..errors import UserError

#: the flags of this group (their dests), left out of the run options the workers get
FLAGS = {"cluster": "--cluster", "fleet": "--fleet", "workers": "--workers",
         "shards_per_worker": "--shards-per-worker", "restart_workers": "--restart-workers",
         "gather": "--gather", "cluster_timeout": "--cluster-timeout"}
#: options only the client uses: neither the workers' rebuilt plans nor fleet runs need them
CLIENT_ONLY = ("func", "argv", "json", "quiet", *FLAGS)
#: flags of shard mode only
SHARD_ONLY = ("shards_per_worker", "restart_workers", "gather")


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
                        "tasks (default 1)")
    g.add_argument("--gather", choices=GATHERS, default=None,
                   help="shard mode: where a call's results go: kept on the workers and gathered "
                        "once per cell, when the cross-check reads them (cell, the default), or "
                        "sent to the client at the end of every call (call)")
    g.add_argument("--restart-workers", choices=RESTARTS, default=None,
                   help="shard mode's scaling study: restart the workers before every row after "
                        "the first, so that no row runs on workers the rows before it used "
                        "(auto, the default: on a --cluster local only; always; never)")
    g.add_argument("--cluster-timeout", type=float, default=None, metavar="S",
                   help=f"seconds to wait for the scheduler and its workers (default "
                        f"{DEFAULT_TIMEOUT:g})")


def cluster_options(args) -> Optional[ClusterOptions]:
    """The typed options of ``--cluster``, or None without it; cluster flags without
    ``--cluster``, or shard mode's flags with ``--fleet``, are usage errors."""
    given = {dest: getattr(args, dest) for dest in FLAGS if getattr(args, dest) is not None}
    if args.cluster is None:
        if given:
            raise UserError(f"{FLAGS[next(iter(given))]} needs --cluster local or "
                            "--cluster tcp://HOST:PORT")
        return None
    if args.fleet:
        for dest in SHARD_ONLY:
            if dest in given:
                raise UserError(f"{FLAGS[dest]} applies to shard mode, not --fleet")
    check_address(args.cluster)
    return ClusterOptions(
        address=args.cluster, fleet=args.fleet,
        worker_counts=parse_counts(args.workers) if args.workers else (),
        shards_per_worker=args.shards_per_worker or 1,
        restart_workers=args.restart_workers or "auto", gather=args.gather or "cell",
        timeout=args.cluster_timeout if args.cluster_timeout is not None else DEFAULT_TIMEOUT,
        run_options={k: v for k, v in vars(args).items() if k not in CLIENT_ONLY})
