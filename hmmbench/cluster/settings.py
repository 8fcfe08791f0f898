"""What shard mode wants of a Dask cluster, through Dask's configuration and public APIs only.

* Work stealing off (``distributed.scheduler.work-stealing``): an idle worker (one left out of a
  smaller worker count, or one a moment ahead) would otherwise steal a piece, copy the whole
  shard it needs and compute beside its holder, which makes one "worker" two. Read by the
  scheduler when it starts: set here for ``--cluster local``; a scheduler started by hand gets
  it from its environment (``DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False``). A fault still
  moves a dead worker's tasks: that is the scheduler's recovery, not stealing.
* The workers' statistical profilers off (``distributed.worker.profile.enabled``): a sample of
  the running task's stack every 10 ms for the dashboard, each taking the GIL. Read by a worker
  when it starts (a local cluster's nannies pass this process's configuration on; a worker
  started by hand reads ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False``).
* A short GIL switch interval on the workers while shards run (:class:`QuietWorkers`, a worker
  plugin: registered for the run, so a worker that joins or restarts meanwhile gets it too, and
  put back at teardown).

What the cluster actually runs with is read back through ``run_on_scheduler`` / ``run`` and put
in the record; a setting the cluster does not have is named on stderr, never forced.

Imports Dask: only a cluster run imports this module.

Dask's message batching (each control message waits 2-10 ms for more to send with it) has no
configuration or public API; shard mode keeps it (what it costs is in docs/scaling-out.md).
"""
from __future__ import annotations

import contextlib
import sys
from typing import Iterator

from distributed.diagnostics.plugin import WorkerPlugin

STEALING = "distributed.scheduler.work-stealing"
PROFILER = "distributed.worker.profile.enabled"
#: what a cluster started here runs with
LOCAL_CONFIG = {STEALING: False, PROFILER: False}
#: A worker's GIL switch interval while shards run: every driver call of a task gives the GIL
#: up, and the event loop's thread, once it has it, keeps it up to the interval (Python's default
#: 5 ms). A LuxC ssv call's task took 15.8 ms at 5 ms and 15.2 ms at 0.5 ms (H200).
TASK_SWITCH_INTERVAL = 0.0005
PLUGIN_NAME = "hmmbench-quiet-workers"


def _config(key: str):
    import dask
    return dask.config.get(key, default=None)


def _has_stealing(dask_scheduler) -> bool:
    return "stealing" in dask_scheduler.extensions


def scheduler_stealing(client):
    """Whether the scheduler steals work (it has the extension its configuration adds at
    start; read, never changed); None if it would not say."""
    try:
        return bool(client.run_on_scheduler(_has_stealing))
    except Exception:  # noqa: BLE001 - a scheduler may refuse run_on_scheduler
        return None


def worker_profilers(client) -> dict:
    """Worker address -> whether its statistical profiler runs (its configuration)."""
    try:
        return {w: bool(v) for w, v in client.run(_config, PROFILER).items()}
    except Exception:  # noqa: BLE001 - a cluster may refuse client.run
        return {}


class QuietWorkers(WorkerPlugin):
    """The worker's GIL switch interval set at setup, put back at teardown."""

    def __init__(self, switch: float):
        self.switch = switch
        self.was = None

    def setup(self, worker) -> None:
        self.was = sys.getswitchinterval()
        sys.setswitchinterval(self.switch)

    def teardown(self, worker) -> None:
        if self.was is not None:
            sys.setswitchinterval(self.was)


@contextlib.contextmanager
def quiet_workers(client, switch: float = TASK_SWITCH_INTERVAL) -> Iterator[bool]:
    """The workers' GIL switch interval ``switch`` while shards run (a registered worker
    plugin), Python's default back afterwards. Yields whether the cluster took the plugin."""
    try:
        client.register_plugin(QuietWorkers(switch), name=PLUGIN_NAME)
        done = True
    except Exception:  # noqa: BLE001 - a hardened cluster: run as is, and say so in the record
        done = False
    try:
        yield done
    finally:
        if done and client.status == "running":     # a lost scheduler took the plugin along
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(PLUGIN_NAME)
