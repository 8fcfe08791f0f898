"""``hmmbench run --cluster ...``: connect, then shard mode (with its scaling study) or fleet
mode; returns a :class:`hmmbench.runner.Benchmark` whose ``cluster`` holds the cluster's
description (workers, hosts, devices, versions) and the scaling rows."""
from __future__ import annotations

import sys

from ..errors import UserError
from ..memory import MemoryLimit
from ..options import run_options
from ..runner import run_benchmark
from ..runner.benchmark import Benchmark, devices_of
from .connect import TRIM_ENV, connect, versions, wait_for_workers
from .memory import check_client, check_shards
from .options import ClusterOptions
from .scaling import fill_efficiency
from .worker import cpus


def say(text: str) -> None:
    print(f"cluster: {text}", file=sys.stderr, flush=True)


def run_cluster(opts: ClusterOptions, workload, cfg, backends: list, datasets: list, plan: dict,
                progress) -> Benchmark:
    start = opts.largest
    with connect(opts.address, start if opts.local else None, opts.timeout) as (client, kind):
        workers = wait_for_workers(client, start or 1, opts.timeout)
        info = {"address": opts.address, "kind": kind, "client_versions": versions(),
                "shards_per_worker": opts.shards_per_worker, "client_cpus": cpus()}
        if opts.fleet:
            from .fleet import run_fleet
            chosen = workers[:start] if start else workers
            say(f"fleet ({opts.fleet}) over {len(chosen)} workers")
            bench = run_fleet(client, chosen, workload, dict(opts.run_options), cfg, backends,
                              opts.fleet == "in-turn", say)
            bench.cluster.update(info)
            return bench
        return _shard(client, workers, info, opts, workload, cfg, backends, datasets, plan,
                      progress)


def _shard(client, workers, info, opts: ClusterOptions, workload, cfg, backends, datasets,
           plan, progress) -> Benchmark:
    from .settings import TASK_SWITCH_INTERVAL, scheduler_stealing, worker_profilers
    from .sharded import LocalReferences, Session
    session = Session(client, workload, dict(opts.run_options), plan.get("launches_fn"),
                      per_worker=opts.shards_per_worker, gather=opts.gather)
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
    counts = list(opts.worker_counts) or [len(session.capable)]
    if counts[-1] > len(session.capable):
        raise UserError(f"--workers {counts[-1]}: only {len(session.capable)} workers of the "
                        "cluster can run the backends asked for")
    given = run_options(opts.run_options, workload)
    limit = MemoryLimit.of(given.memory_limit, given.device_memory_limit)
    check_shards(session, counts, backends, datasets, cfg, plan.get("backends_for"), limit)
    check_client(session, counts, datasets, cfg, limit)
    stealing = scheduler_stealing(client)
    if stealing:
        say("the scheduler steals work: an idle worker may run a piece away from its shard "
            "(the record's shards_retried lists each); start it with "
            "DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False")
    refs = LocalReferences.for_config(cfg)
    restart = opts.restarts_between_rows
    records, chunkings, bench, quiet = _scale(session, counts, backends, datasets, cfg,
                                              progress, refs, plan.get("backends_for"),
                                              opts.timeout if restart else None)
    profilers = worker_profilers(client)
    info.update(mode="shard", worker_counts=counts, gather=opts.gather,
                work_stealing=stealing, workers_restarted_between_rows=restart,
                worker_profilers=sorted({session.label(w) for w, on in profilers.items()
                                         if on and w in session.probes}),
                worker_switch_interval_s=TASK_SWITCH_INTERVAL if quiet else None,
                workers=[{**{k: p[k] for k in ("worker", "name", "host", "pid",
                                               "cuda_visible_devices", "cpus", "versions",
                                               "malloc_trim_threshold")},
                          "backends": p["backends"]} for p in session.probes.values()],
                excluded={session.label(w): why for w, why in session.excluded.items()},
                shards_retried=session.retried, scaling=fill_efficiency(records))
    return Benchmark(records, devices_of(records), ",".join(dict.fromkeys(chunkings)),
                     bench.config, cluster=info)


def _scale(session, counts, backends, datasets, cfg, progress, refs, pick,
           restart_timeout) -> tuple:
    """The sharded benchmark at each worker count, the workers restarted before every row
    after the first when ``restart_timeout`` is given: (records, chunkings, the last count's
    Benchmark, whether the workers took the quiet plugin). A registered plugin is set up on
    restarted workers too."""
    from .settings import quiet_workers
    from .sharded import ClusterDataset, ShardedBackend, single_launch
    records, chunkings = [], []
    try:
        with quiet_workers(session.client) as quiet:
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
                bench = run_benchmark(wrapped, list(sharded.values()), cfg, progress,
                                      launches_fn=single_launch, refs=refs,
                                      backends_for=backends_for)
                session.release()
                for r in bench.records:
                    _annotate(session, r)
                records += bench.records
                chunkings += bench.chunking.split(",")
    finally:
        session.release()
    return records, chunkings, bench, quiet


def _annotate(session, r) -> None:
    """A sharded record's worker count, per-worker stages and timeline, and moved shards."""
    from .timeline import worker_stages, worker_timeline
    r.workers = session.n
    stages = worker_stages(session, r)
    if stages:
        r.info["worker_stages"] = stages
        r.launches = sum(w["launches"] for w in stages)   # the workers' launches
    timeline = worker_timeline(session, r)
    if timeline:
        r.info["worker_timeline"] = timeline
    moved = [x for x in session.retried if (x["sha256"], x["chunking"], x["backend"]) ==
             (r.dataset_sha256, r.chunking, r.backend)]
    if moved:
        r.info["shards_retried"] = moved
