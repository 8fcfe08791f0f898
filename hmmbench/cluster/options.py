"""The options of a cluster run, as one frozen object built once by the CLI
(:func:`hmmbench.cli.cluster_args.cluster_options`); nothing in this package reads the parsed
command line. No Dask import: without ``--cluster`` nothing of Dask is imported or started."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

from ..errors import UserError

FLEET_ORDERS = ("at-once", "in-turn")
RESTARTS = ("auto", "always", "never")
#: where a sharded call's results go: kept on the workers and gathered once per cell (when the
#: runner reads them: the cross-check), or sent to the client at the end of every call
GATHERS = ("cell", "call")
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ClusterOptions:
    """``hmmbench run --cluster ...``: where the cluster is and how the run uses it."""
    address: str                                    # "local" or a scheduler address
    fleet: Optional[str] = None                     # None: shard mode; else a FLEET_ORDERS entry
    worker_counts: tuple = ()                       # shard mode: the scaling study's counts
    shards_per_worker: int = 1
    restart_workers: str = "auto"
    gather: str = "cell"
    timeout: float = DEFAULT_TIMEOUT
    #: the run's own options as plain data: the workers rebuild generated datasets and fleet
    #: mode's whole benchmark from them (the workload's plan hook reads them)
    run_options: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.fleet is not None and self.fleet not in FLEET_ORDERS:
            raise UserError(f"--fleet {self.fleet}: expected one of {', '.join(FLEET_ORDERS)}")
        if not 0 < self.timeout <= 86_400:
            raise UserError("--cluster-timeout must be above 0 and at most 86400 seconds")
        if self.shards_per_worker < 1:
            raise UserError("--shards-per-worker must be at least 1")
        if self.restart_workers not in RESTARTS:
            raise UserError(f"--restart-workers {self.restart_workers}: expected one of "
                            f"{', '.join(RESTARTS)}")
        if self.gather not in GATHERS:
            raise UserError(f"--gather {self.gather}: expected one of {', '.join(GATHERS)}")
        if self.fleet and len(self.worker_counts) > 1:
            raise UserError("--fleet takes one worker count (--workers N), not a scaling study")
        object.__setattr__(self, "worker_counts", tuple(self.worker_counts))
        object.__setattr__(self, "run_options", MappingProxyType(dict(self.run_options)))

    @property
    def local(self) -> bool:
        return self.address == "local"

    @property
    def largest(self) -> Optional[int]:
        """The most workers asked for (None: all of them)."""
        return max(self.worker_counts) if self.worker_counts else None

    @property
    def restarts_between_rows(self) -> bool:
        """A scaling study's rows on fresh workers: asked for, or by default on a local
        cluster (a running scheduler's workers are the user's: restarted only when asked)."""
        return len(self.worker_counts) > 1 and (
            self.restart_workers == "always" or (self.restart_workers == "auto" and self.local))


def parse_counts(text: str) -> tuple:
    """'1,2,4' -> (1, 2, 4) (sorted, unique); a bad list is a usage error."""
    try:
        counts = sorted({int(t) for t in str(text).split(",") if t.strip()})
    except ValueError:
        counts = []
    if not counts or counts[0] < 1:
        raise UserError(f"--workers '{text}': expected worker counts such as 1,2,4")
    return tuple(counts)
