"""``hmmbench run --cluster ...``: connect, then shard mode (with its scaling study) or fleet
mode; returns a :class:`hmmbench.runner.Benchmark` whose ``cluster`` holds the cluster's
description (workers, hosts, devices, versions) and the scaling rows."""
from __future__ import annotations

import contextlib
import sys

from ..errors import UserError
from ..runner import run_benchmark
from ..runner.benchmark import Benchmark, devices_of
from .connect import DEFAULT_TIMEOUT, TRIM_ENV, connect, versions, wait_for_workers
from .scaling import fill_efficiency, parse_counts
from .settings import TASK_SWITCH_INTERVAL, prompt_messages, quiet_workers, shards_stay
from .worker import cpus

#: options that only the client uses (not passed to the workers' rebuilt plans)
CLIENT_ONLY = ("func", "argv", "json", "quiet", "cluster", "fleet", "workers", "cluster_timeout",
               "shards_per_worker", "dask_batching", "restart_workers")


def worker_args(args) -> dict:
    """The run's options as plain data for the workers (they rebuild datasets from them)."""
    return {k: v for k, v in vars(args).items() if k not in CLIENT_ONLY}


def say(text: str) -> None:
    print(f"cluster: {text}", file=sys.stderr, flush=True)


def run_cluster(args, workload, cfg, backends: list, datasets: list, plan: dict,
                progress) -> Benchmark:
    timeout = args.cluster_timeout or DEFAULT_TIMEOUT
    counts = parse_counts(args.workers) if args.workers else None
    if args.fleet and counts and len(counts) > 1:
        raise UserError("--fleet takes one worker count (--workers N), not a scaling study")
    start = max(counts) if counts else None
    with connect(args.cluster, start if args.cluster == "local" else None, timeout) as (client,
                                                                                        kind):
        workers = wait_for_workers(client, start or 1, timeout)
        info = {"address": args.cluster, "kind": kind, "client_versions": versions(),
                "shards_per_worker": args.shards_per_worker or 1, "client_cpus": cpus()}
        if args.fleet:
            from .fleet import run_fleet
            chosen = workers[:start] if start else workers
            say(f"fleet ({args.fleet}) over {len(chosen)} workers")
            bench = run_fleet(client, chosen, workload, worker_args(args), cfg, backends,
                              args.fleet == "in-turn", say)
            bench.cluster.update(info)
            return bench
        return _shard(client, workers, counts, info, args, workload, cfg, backends, datasets,
                      plan, progress)


def _shard(client, workers, counts, info, args, workload, cfg, backends, datasets, plan,
           progress) -> Benchmark:
    from .sharded import LocalReferences, Session
    session = Session(client, workload, worker_args(args), plan.get("launches_fn"),
                      per_worker=args.shards_per_worker or 1)
    session.probe(workers, backends)
    for w, why in session.excluded.items():
        say(f"worker {session.label(w)} gets no shards: {why}")
    trimmed = [session.label(w) for w, p in session.probes.items()
               if p.get("malloc_trim_threshold")]
    if trimmed:
        say(f"{len(trimmed)} workers ({', '.join(trimmed[:4])}{', ...' if len(trimmed) > 4 else ''})"
            f" run with {TRIM_ENV} set (Dask's default): NumPy's large temporaries are then "
            "mapped and unmapped on every call, which slows a backend's host work (3x measured);"
            f" start them with distributed.nanny.pre-spawn-environ.{TRIM_ENV} set to null")
    if not session.capable:
        raise UserError("no worker of the cluster can run the backends asked for: "
                        + "; ".join(f"{session.label(w)}: {why}"
                                    for w, why in session.excluded.items()))
    counts = counts or [len(session.capable)]
    if counts[-1] > len(session.capable):
        raise UserError(f"--workers {counts[-1]}: only {len(session.capable)} workers of the "
                        "cluster can run the backends asked for")
    refs = LocalReferences.for_config(cfg)
    pick = plan.get("backends_for")
    restart = len(counts) > 1 and (args.restart_workers == "always" or (
        args.restart_workers in (None, "auto") and args.cluster == "local"))
    with shards_stay(client) as stealing_off:
        if not stealing_off:
            say("the scheduler refused to turn work stealing off: a piece may run away from "
                "its shard (the record's shards_retried lists each)")
        records, chunkings, bench, prompt, quiet = _scale(
            session, counts, backends, datasets, cfg, progress, refs, pick, args,
            args.cluster_timeout or DEFAULT_TIMEOUT if restart else None)
    info.update(mode="shard", worker_counts=counts, work_stealing_off=stealing_off,
                workers_restarted_between_rows=restart,
                messages_at_once=bool(prompt), worker_profilers_paused=quiet,
                worker_switch_interval_s=TASK_SWITCH_INTERVAL if quiet else None,
                workers=[{**{k: p[k] for k in ("worker", "name", "host", "pid",
                                               "cuda_visible_devices", "cpus", "versions",
                                               "malloc_trim_threshold")},
                          "backends": p["backends"]} for p in session.probes.values()],
                excluded={session.label(w): why for w, why in session.excluded.items()},
                shards_retried=session.retried, scaling=fill_efficiency(records))
    return Benchmark(records, devices_of(records), ",".join(dict.fromkeys(chunkings)),
                     bench.config, cluster=info)


@contextlib.contextmanager
def _prompt(client, args):
    """Dask's control messages sent at once, unless --dask-batching keeps its batching (None)."""
    if args.dask_batching:
        yield None
    else:
        with prompt_messages(client) as done:
            yield done


def _scale(session, counts, backends, datasets, cfg, progress, refs, pick, args,
           restart_timeout) -> tuple:
    """The sharded benchmark at each worker count, the workers restarted before every row
    after the first when ``restart_timeout`` is given: (records, chunkings, the last count's
    Benchmark, whether messages went at once in every row (None: Dask's batching asked for),
    whether the workers were quiet in every row). The workers' settings are made per row, so
    that restarted workers get them too."""
    from .sharded import ClusterDataset, ShardedBackend, single_launch, worker_stages
    records, chunkings = [], []
    prompt_all, quiet_all = None if args.dask_batching else True, True
    try:
        for i, n in enumerate(counts):
            if i and restart_timeout is not None:
                say("restarting the workers (fresh processes for every row)")
                session.restart(backends, restart_timeout)
            session.use(n)
            say(f"sharding over {len(session.active)} workers: "
                + ", ".join(session.label(w) for w in session.active))
            sharded = {b.name: ShardedBackend(b, session) for b in backends}
            wrapped = [ClusterDataset(ds, session) for ds in datasets]
            backends_for = ((lambda cds: [sharded[b.name] for b in pick(cds.inner)])
                            if pick else None)
            with _prompt(session.client, args) as prompt, quiet_workers(session.client) as quiet:
                if prompt is False and prompt_all:
                    say("the scheduler refused to send its messages at once: every sharded "
                        "call waits for Dask's message batching")
                prompt_all = prompt_all and prompt
                quiet_all = quiet_all and quiet
                bench = run_benchmark(wrapped, list(sharded.values()), cfg, progress,
                                      launches_fn=single_launch, refs=refs,
                                      backends_for=backends_for)
            session.release()
            for r in bench.records:
                r.workers = session.n
                stages = worker_stages(session, r)
                if stages:
                    r.info["worker_stages"] = stages
                    r.launches = sum(w["launches"] for w in stages)   # the workers' launches
                moved = [x for x in session.retried if (x["sha256"], x["chunking"],
                                                        x["backend"]) ==
                         (r.dataset_sha256, r.chunking, r.backend)]
                if moved:
                    r.info["shards_retried"] = moved
            records += bench.records
            chunkings += bench.chunking.split(",")
    finally:
        session.release()
    return records, chunkings, bench, prompt_all, quiet_all
