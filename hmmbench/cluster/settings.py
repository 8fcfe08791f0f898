"""What shard mode changes on a Dask cluster while its shards run, each put back afterwards: the
scheduler's work stealing off, control messages sent at once, the workers quiet (profilers
paused, a short GIL switch interval). Each yields whether the cluster let it; the record says."""
from __future__ import annotations

import contextlib
from typing import Iterator


async def _stop_stealing(dask_scheduler) -> bool:
    """Stop the scheduler's work stealing; whether it was running."""
    stealing = dask_scheduler.extensions.get("stealing")
    running = stealing is not None and "stealing" in dask_scheduler.periodic_callbacks
    if running:
        await stealing.stop()
    return running


async def _start_stealing(dask_scheduler) -> None:
    await dask_scheduler.extensions["stealing"].start()


@contextlib.contextmanager
def shards_stay(client) -> Iterator[bool]:
    """Work stealing off while shards are placed: an idle worker (one left out of a smaller
    worker count, or one a moment ahead) would otherwise steal a piece, copy the whole shard it
    needs and compute beside its holder, which inflates a copy's time and makes one "worker" two.
    Faults still move a dead worker's tasks (that is the scheduler's own recovery, not stealing).
    Turned back on afterwards where it was on. Yields whether it could be turned off (a
    scheduler may refuse ``run_on_scheduler``)."""
    try:
        was_on = client.run_on_scheduler(_stop_stealing)
        stopped = True
    except Exception:  # noqa: BLE001 - a hardened scheduler: run, and say so in the record
        was_on, stopped = False, False
    try:
        yield stopped
    finally:
        if was_on:
            with contextlib.suppress(Exception):
                client.run_on_scheduler(_start_stealing)


#: Dask batches its control messages: a message sent within an interval of the stream's last
#: one waits for it (client -> scheduler 10 ms, scheduler -> worker 5 ms, scheduler -> client and
#: worker -> scheduler 2 ms). A sharded call is a few messages each way, each right after the
#: last call's, so each waits: about 10 ms a call, as long as a profile filter's kernels.
PROMPT_INTERVAL = 0.0


def _set_scheduler_intervals(dask_scheduler, interval=None, old=None) -> dict:
    """Set every scheduler stream's interval (to ``interval``, or each back to ``old``'s);
    return what they were."""
    comms = {**{f"w:{a}": c for a, c in dask_scheduler.stream_comms.items()},
             **{f"c:{a}": c for a, c in dask_scheduler.client_comms.items()}}
    was = {k: c.interval for k, c in comms.items()}
    for k, c in comms.items():
        c.interval = interval if old is None else old.get(k, c.interval)
    return was


def _set_worker_interval(dask_worker, interval) -> float:
    was = dask_worker.batched_stream.interval
    dask_worker.batched_stream.interval = interval
    return was


@contextlib.contextmanager
def prompt_messages(client, interval: float = PROMPT_INTERVAL) -> Iterator[bool]:
    """Dask's control messages sent at once (every batching interval set to ``interval``) while
    shards run, the same way Dask's own latency studies turn the batching off; each stream's
    interval put back afterwards. A worker restarted meanwhile keeps Dask's default. Yields
    whether every stream could be set (a scheduler may refuse ``run_on_scheduler``)."""
    comm = getattr(client, "scheduler_comm", None)
    own = comm.interval if comm is not None else None
    sched, workers = None, {}
    try:
        sched = client.run_on_scheduler(_set_scheduler_intervals, interval=interval)
        workers = client.run(_set_worker_interval, interval=interval)
        comm.interval = interval
        done = True
    except Exception:  # noqa: BLE001 - a hardened scheduler: run as is, and say so in the record
        done = False
    try:
        yield done
    finally:
        with contextlib.suppress(Exception):
            if own is not None:
                comm.interval = own
            if sched is not None:
                client.run_on_scheduler(_set_scheduler_intervals, old=sched)
            for addr, was in workers.items():
                client.run(_set_worker_interval, interval=was, workers=[addr])


#: A worker's GIL switch interval while shards run: every driver call of a task gives the GIL
#: up, and the event loop's thread, once it has it, keeps it up to the interval (Python's default
#: 5 ms). A LuxC ssv call's task took 15.8 ms at 5 ms and 15.2 ms at 0.5 ms (H200).
TASK_SWITCH_INTERVAL = 0.0005


def _quiet(dask_worker, switch: float) -> dict:
    """Pause the worker's statistical profiler and set its GIL switch interval; what they were."""
    import sys
    callbacks = [dask_worker.periodic_callbacks.get(n) for n in ("profile", "profile-cycle")]
    callbacks = [pc for pc in callbacks if pc is not None]
    was = {"profiler": any(pc.is_running() for pc in callbacks),
           "switch": sys.getswitchinterval()}
    for pc in callbacks:
        pc.stop()
    sys.setswitchinterval(switch)
    return was


def _restore(dask_worker, was: dict) -> None:
    import sys
    sys.setswitchinterval(was["switch"])
    if was["profiler"]:
        for name in ("profile", "profile-cycle"):
            pc = dask_worker.periodic_callbacks.get(name)
            if pc is not None:
                pc.start()


@contextlib.contextmanager
def quiet_workers(client, switch: float = TASK_SWITCH_INTERVAL) -> Iterator[bool]:
    """While shards run, the workers' statistical profilers (a sample of the running task's stack
    every 10 ms, for the dashboard's profile page; each takes the GIL) are paused and their GIL
    switch interval is ``switch``; both are put back afterwards. Yields whether every worker
    could be set."""
    try:
        was = client.run(_quiet, switch=switch)
        done = True
    except Exception:  # noqa: BLE001 - a hardened cluster: run as is, and say so in the record
        was, done = {}, False
    try:
        yield done
    finally:
        for addr, before in was.items():
            with contextlib.suppress(Exception):
                client.run(_restore, was=before, workers=[addr])
