"""Fleet mode: the same benchmark matrix on every worker (at once, or one worker after another),
one result file whose rows carry each worker's name, host and device."""
from __future__ import annotations

from ..runner import RunRecord
from ..runner.benchmark import Benchmark
from . import worker as remote
from .connect import worker_memory_limits


def run_fleet(client, workers: list, workload, args: dict, cfg, backends: list,
              in_turn: bool, say) -> Benchmark:
    """Every worker runs ``hmmbench run`` with the same arguments; their records are joined."""
    env = remote.passed_env()
    limits = worker_memory_limits(client)

    def submit(w):
        # loose restriction: a worker that dies has its matrix re-run on another one, and the
        # rows then name the worker that ran them
        return client.submit(remote.fleet_run, args, workload.name, cfg, backends, env,
                             limits.get(w), workers=[w],
                             allow_other_workers=True, pure=False)

    results = []
    if in_turn:
        for w in workers:
            results.append(submit(w).result())
            say(f"fleet: {results[-1]['name']}@{results[-1]['host']} done in "
                f"{results[-1]['seconds']:.1f} s")
    else:
        results = client.gather([submit(w) for w in workers])
    records, devices, chunkings = [], [], []
    for res in results:
        for d in res["records"]:
            rec = RunRecord(**d)
            rec.worker, rec.host = str(res["name"]), res["host"]
            records.append(rec)
        for d in res["devices"]:
            devices.append({**d, "host": res["host"], "worker": str(res["name"])})
        chunkings += [c for c in res["chunking"].split(",") if c]
    config = dict(results[0]["config"]) if results else {}
    workers_info = [{k: res[k] for k in ("worker", "name", "host", "pid", "seconds")}
                    for res in results]
    return Benchmark(records, devices, ",".join(dict.fromkeys(chunkings)), config,
                     cluster={"mode": "fleet", "order": "in-turn" if in_turn else "at-once",
                              "ran": workers_info})
