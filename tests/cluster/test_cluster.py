"""hmmbench.cluster on a Dask LocalCluster of 2 worker processes (no GPU): sharded results identical
to a single-process run, fleet rows per worker, a killed worker's shards re-run elsewhere, fast
usage errors, and no Dask at all without --cluster."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import REPO
from helpers.real_data import real_set
from hmmbench import cli, results, workload
from hmmbench.cluster.shards import balance, shard_bounds
from hmmbench.registry import select

distributed = pytest.importorskip("distributed", reason="pip install 'hmmbench[dask]'")
PAIRHMM = workload.get("pairhmm")
#: Intel's OpenCL CPU runtime (scripts/install_opencl_cpu.sh); PoCL's CPU target fails here
OPENCL_CPU = "Intel"


def _dataset(name: str):
    return real_set(name)


def _backend(name: str):
    b = select([name])[0]
    reason = b.unavailable_reason()
    if reason:
        pytest.skip(f"{name}: {reason}")
    return b


#: How often the fixture's servers check their event loops (Dask: 20 ms) and its workers'
#: profilers sample (10 ms): idle most of the module's life, the cluster spent ~10% of a core
#: on them (measured idle: 2.0 CPU-s per 20 s, 0.5 with these). Its profilers stay on, as
#: Dask's default has them (the tests of what hmmbench says about them need that).
IDLE_CHECKS = {"distributed.admin.tick.interval": "1s",
               "distributed.worker.profile.interval": "100ms"}


def _local_cluster():
    import logging
    import dask
    with dask.config.set(IDLE_CHECKS):      # the nannies keep it for every worker they start
        return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                        memory_limit=0, dashboard_address=None,
                                        silence_logs=logging.ERROR)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    os.environ.setdefault("HMMBENCH_OPENCL_DEVICE", OPENCL_CPU)
    with _local_cluster() as c, distributed.Client(c) as client:
        yield c, client


_SINGLE: dict = {}


def _single_values(backend: str, name: str) -> np.ndarray:
    """The single-process results, launch by launch as the runner runs them (computed once)."""
    if (backend, name) not in _SINGLE:
        b, ds = _backend(backend), _dataset(name)
        _SINGLE[backend, name] = np.concatenate(
            [b.run(u).log10 for u in PAIRHMM.launches(ds.load(), "original")])
    return _SINGLE[backend, name]


def _sharded_values(client, backend: str, ds, n: int = 2) -> tuple:
    from hmmbench.cluster.sharded import sharded_values
    return sharded_values(client, PAIRHMM, backend, ds, n)


@pytest.mark.parametrize("ids, text", [({0, 1, 2, 3}, "0-3"), ({5}, "5"),
                                       ({0, 1, 2, 8, 10, 11}, "0-2,8,10-11")])
def test_cpus_are_named_as_ranges(ids, text, monkeypatch):
    from hmmbench.cluster import worker
    monkeypatch.setattr(worker.os, "sched_getaffinity", lambda pid: ids)
    assert worker.cpus() == text


# --- shard planning --------------------------------------------------------------------------
def test_balance_cuts_whole_atoms_near_equal_cost():
    costs = np.random.default_rng(1).integers(1, 1000, 5000)
    bounds = balance(costs, 3)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(costs)
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    sums = [int(costs[a:b].sum()) for a, b in bounds]
    assert max(sums) - min(sums) <= 2 * costs.max()
    assert balance([5, 1, 1, 1, 1, 1], 2) == [(0, 1), (1, 6)]      # a big atom is never split
    assert balance([1, 2], 4)[-1] == (2, 2)                         # more shards than atoms


def test_pairhmm_shards_keep_batches_and_cells():
    ds = _dataset("chunks@3000")
    unit = ds.load()
    costs = PAIRHMM.shard_costs(unit)
    assert len(costs) == unit.n_batches and int(costs.sum()) == unit.cells
    shards = [PAIRHMM.shard(unit, a, b) for a, b in shard_bounds(PAIRHMM, unit, 3)]
    assert sum(s.n_pairs for s in shards) == unit.n_pairs
    assert sum(s.cells for s in shards) == unit.cells


def test_a_shard_past_its_worker_memory_limit_is_refused(cluster):
    """Each worker checks its shards against its own memory limit (Dask's, as the scheduler
    reports it, sent with the task) before the backend is called: past it, the call is refused
    naming the estimate and the limit; within it, the shards run."""
    from hmmbench.cluster.connect import wait_for_workers
    from hmmbench.cluster.connect import worker_memory_limits
    from hmmbench.cluster.sharded import ClusterDataset, Session, ShardedBackend
    _, client = cluster
    assert set(worker_memory_limits(client).values()) == {None}   # the fixture's: memory_limit=0
    ds, inner = _dataset("chunks@700"), _backend("numpy")
    session = Session(client, PAIRHMM, {"dataset": [ds.name], "backend": ["numpy"]})
    session.probe(wait_for_workers(client, 2, 60), [inner])
    session.use(2)
    sb, cds = ShardedBackend(inner, session), ClusterDataset(ds, session)
    proxy = cds.proxies()[0].with_mode("original")
    session.memory_limits = {w: 1 << 20 for w in session.active}
    with pytest.raises(RuntimeError) as err:
        sb.run(proxy)
    assert "needs about" in str(err.value) and "(estimate" in str(err.value)
    assert "the worker's memory limit, 1.0 MiB" in str(err.value)
    session.memory_limits = {w: 64 << 30 for w in session.active}
    got = np.asarray(sb.run(proxy).log10)
    assert len(got) == ds.n_pairs, (len(got), ds.n_pairs, proxy)
    session.release()


def test_a_set_too_large_to_rebuild_on_a_worker_is_refused_first(monkeypatch):
    """A generated set a worker rebuilds whole before cutting it: past the worker's memory
    limit, refused before it is generated, naming the estimate and the limit."""
    from hmmbench.cluster import worker
    from hmmbench.errors import UserError
    from hmmbench.pairhmm.datasets import synthetic
    ds = _dataset("equal-512@1e4")
    spec = {"workload": "pairhmm", "name": ds.name, "sha256": ds.sha256,
            "args": {"dataset": [ds.name], "backend": ["numpy"]}}
    monkeypatch.setattr(synthetic, "generate_fixed",
                        lambda *a: pytest.fail("generated the set before the memory check"))
    with pytest.raises(UserError) as err:
        worker.load_part(spec, 0, 2, 1, {}, 8 << 20)
    assert f"dataset '{ds.name}' needs about" in str(err.value)
    assert "the worker's memory limit, 8.0 MiB" in str(err.value)


def test_profile_shards_are_one_database_slice_for_every_model_and_kind():
    pytest.importorskip("pyhmmer")
    from hmmbench.options import run_options
    profile = workload.get("profile")
    values = dict(dataset=["proteins-2e4"], model=["PF02826", "LuxC"], kind=["ssv", "msv"],
                  backend=[])
    cells, _ = profile.plan(run_options(values, profile), [])
    units = [c.load() for c in cells]
    bounds = shard_bounds(profile, units[0], 2)
    assert [shard_bounds(profile, u, 2) for u in units] == [bounds] * 4   # M scales every cost
    firsts = [profile.shard(u, *bounds[1]) for u in units]
    assert all(f.seqs is firsts[0].seqs for f in firsts)           # resident once per worker
    # ... under a key of its own (a device backend keeps no keyless set resident)
    assert {f.database for f in firsts} == {f"{units[0].database}[{bounds[1][0]}:{bounds[1][1]}]"}
    assert profile.shard(units[0], *bounds[0]).database != firsts[0].database
    assert sum(len(profile.shard(units[0], a, b).seqs) for a, b in bounds) == len(units[0].seqs)
    assert firsts[0].seqs.n_residues == int(units[0].seqs.lengths[slice(*bounds[1])].sum())


def _sharded_record(model, workers, total, kernel, walls, cells=1e9):
    from types import SimpleNamespace
    return SimpleNamespace(
        dataset="db", dataset_sha256="d", chunking="whole", backend="b", model=model,
        kind="ssv", workers=workers, status="ok", device="gpu",
        timing_s={"total": total, "kernel": kernel}, gcups_total=cells / total / 1e9,
        gcups_kernel=cells / kernel / 1e9, info={"worker_stages": [{"wall": w, "kernel": kernel}
                                                                   for w in walls]})


def test_scaling_rows_say_what_stays_outside_the_workers_and_sum_a_sweep():
    from hmmbench.cluster.scaling import completed, fill_efficiency
    records = [_sharded_record("m1", 1, 0.020, 0.006, [0.010]),
               _sharded_record("m1", 2, 0.020, 0.003, [0.006, 0.004]),
               _sharded_record("m2", 1, 0.100, 0.090, [0.095]),
               _sharded_record("m2", 2, 0.060, 0.045, [0.050, 0.048])]
    rows = fill_efficiency(records)
    assert [(r["model"], r["workers"]) for r in rows] == [
        ("m1", 1), ("m1", 2), ("m2", 1), ("m2", 2), ("all", 1), ("all", 2)]
    assert [round(r["outside_s"], 6) for r in rows[:4]] == [0.010, 0.014, 0.005, 0.010]
    swept = rows[5]
    assert swept["cells"] == 2 and swept["total_s"] == pytest.approx(0.080)
    assert swept["parallel_efficiency"] == pytest.approx(0.120 / (2 * 0.080))
    assert swept["parallel_efficiency_kernel"] == pytest.approx(0.096 / (2 * 0.048))
    assert swept["gcups_total"] == pytest.approx(2 / 0.080)      # 2e9 cells in 80 ms
    # a file written before these fields: the same rows, made from what it stored
    old = [{k: v for k, v in r.items() if k != "outside_s"} for r in rows[:4]]
    assert completed(old) == rows
    assert completed(rows) == rows


# --- shard mode: identical to one process ----------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy-f32", "opencl-inter-tile8"])
def test_sharded_10s_identical_to_single_process(cluster, backend, monkeypatch):
    """A real set of 7 active regions (10s: 3,550 pairs) over two workers."""
    monkeypatch.setenv("HMMBENCH_OPENCL_DEVICE", OPENCL_CPU)
    _, client = cluster
    single = _single_values(backend, "10s")
    got, session, _, cds = _sharded_values(client, backend, _dataset("10s"))
    assert np.array_equal(got, single)
    shards = session.current.shard_sizes
    assert len(shards) == 2 and all(s[0][0] > 0 for s in shards)   # both workers had work
    assert not session.retried
    session.release()


def test_sharded_generated_set_is_rebuilt_on_workers(cluster, per_worker=3):
    from hmmbench.cluster.sharded import sharded_values
    _, client = cluster
    ds = _dataset("chunks@1000")      # 14 batches: 6 shards, none empty
    single = _backend("numpy-f32").run(ds.load()).log10
    got, session, _, _ = sharded_values(client, PAIRHMM, "numpy-f32", ds, 2, "merged",
                                        per_worker=per_worker, gather="call")
    assert np.array_equal(got, single)
    assert len(session.current.shard_sizes) == 2 * per_worker
    assert all(s[0][0] > 0 for s in session.current.shard_sizes)   # every shard has work
    session.release()


def _small_pieces(piece_pairs):
    """Generated chunk sets lazy from twice ``piece_pairs`` on, in pieces of ``piece_pairs``
    (None: the real sizes back); run here and on every worker."""
    from hmmbench.pairhmm.datasets import chunks
    saved = _small_pieces.__dict__.setdefault("saved", (chunks.EAGER_LIMIT, chunks.PIECE_PAIRS))
    limit, size = (2 * piece_pairs, piece_pairs) if piece_pairs else saved
    chunks.EAGER_LIMIT, chunks.PIECE_PAIRS = limit, size
    chunks.iter_pieces.__defaults__ = (piece_pairs,)     # None: PIECE_PAIRS at the call, as shipped


@pytest.fixture
def small_pieces(cluster):
    _, client = cluster
    for fn in (_small_pieces, lambda size: client.run(_small_pieces, size)):
        fn(140)
    yield
    for fn in (_small_pieces, lambda size: client.run(_small_pieces, size)):
        fn(None)


def test_lazy_set_runs_and_samples_from_the_shards(cluster, small_pieces):
    from hmmbench.cluster.sharded import sharded_values
    _, client = cluster
    ds = _dataset("chunks@700")       # 4 pieces of about 140 pairs (230, 94, 102, 274)
    assert ds.lazy
    pieces = list(ds.chunks())
    assert len(pieces) >= 3
    b = _backend("numpy-f32")
    single = np.concatenate([b.run(u).log10 for u in pieces])
    got, session, sb, cds = sharded_values(client, PAIRHMM, "numpy-f32", ds, 2, "merged",
                                           per_worker=2)
    assert np.array_equal(got, single)
    proxies = list(cds.chunks())
    # two workers: a sharded call covers two of the set's pieces (each worker's share is one)
    groups = [pieces[i:i + 2] for i in range(0, len(pieces), 2)]
    assert [p.n_items for p in proxies] == [sum(u.n_pairs for u in g) for g in groups]
    # each piece's call submits the next one before gathering its own results (the transfer
    # overlaps compute); the last piece of a pass submits nothing ahead
    placement = cds.placement()
    for k, proxy in enumerate(proxies):
        out = placement.run(sb, proxy.with_mode("merged"))
        start = sum(p.n_items for p in proxies[:k])
        assert np.array_equal(out.log10, single[start:start + proxy.n_items])
        assert list(placement._ahead) == ([("numpy-f32", k + 1, "merged")]
                                          if k + 1 < len(proxies) else [])
    idx = np.array([7, 0, groups[1][0].n_pairs + 3, proxies[1].n_items - 1, 300, 299])
    sample, want = proxies[1].subset(idx), type(pieces[0]).concatenate(groups[1]).subset(idx)
    assert np.array_equal(sample.read_bases, want.read_bases)
    assert np.array_equal(sample.hap_bases, want.hap_bases)
    assert proxies[1].expected is None
    session.release()


def test_lazy_set_checks_at_every_worker_count(cluster, small_pieces, tmp_path):
    """Two workers cut a lazy set into other pieces than one: each piece's sample has its own
    reference (keyed by the piece's place in the set, not its index)."""
    c, _ = cluster
    out = tmp_path / "lazy.json"
    code = cli.main(["run", "-d", "chunks@700", "--chunking", "merged", "-b", "numpy-f32",
                     "--repeat", "1", "--cluster", c.scheduler_address, "--workers", "1,2",
                     "--json", str(out), "-q"])
    assert code == 0
    runs = results.load(out)["runs"]
    assert [(r["workers"], r["status"], r["n_over_tol"]) for r in runs] == [(1, "ok", 0),
                                                                           (2, "ok", 0)]
    assert [r["launches"] for r in runs] == [4, 4]     # 4 pieces: 4 calls, 2 per worker
    # the sample per call doubles with the pieces per call: as many pairs checked
    assert runs[1]["n_checked"] >= runs[0]["n_checked"] > 0


def test_cli_shard_mode_checks_and_scales(cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HMMBENCH_OPENCL_DEVICE", OPENCL_CPU)
    c, _ = cluster
    _dataset("10s")
    _backend("opencl-inter-tile8")
    out = tmp_path / "s.json"
    code = cli.main(["run", "-d", "10s", "-b", "opencl-inter-tile8", "--repeat", "1",
                     "--cluster", c.scheduler_address, "--workers", "1,2", "--json", str(out),
                     "-q"])
    assert code == 0
    doc = results.load(out)
    runs = doc["runs"]
    assert [(r["workers"], r["status"]) for r in runs] == [(1, "ok"), (2, "ok")]
    assert all(r["n_checked"] == r["pairs"] == 3550 for r in runs)
    assert all(r["launches"] == 7 for r in runs)          # one per active region, as one process
    two = runs[1]
    assert len(two["info"]["worker_stages"]) == 2
    assert sum(w["items"] for w in two["info"]["worker_stages"]) == 3550
    assert all(w["task"] >= w["wall"] > 0 for w in two["info"]["worker_stages"])
    assert doc["cluster"]["shards_retried"] == [] and doc["cluster"]["gather"] == "cell"
    # a running scheduler's workers are not restarted unless asked (--restart-workers always)
    assert doc["cluster"]["workers_restarted_between_rows"] is False
    assert doc["cluster"]["worker_switch_interval_s"] == 0.0005
    assert doc["cluster"]["client_cpus"] and all(w["cpus"] for w in doc["cluster"]["workers"])
    # the fixture is a plain LocalCluster: Dask's trim threshold, work stealing and profilers,
    # each named in the record, and warned about where it can move a shard's work
    assert all(w["malloc_trim_threshold"] for w in doc["cluster"]["workers"])
    assert doc["cluster"]["work_stealing"] is True and len(doc["cluster"]["worker_profilers"]) == 2
    err = capsys.readouterr().err
    assert "MALLOC_TRIM_THRESHOLD_ set" in err and "WORK_STEALING=False" in err
    # where each worker's share of a call went, on the client's clock
    timeline = two["info"]["worker_timeline"]
    assert [w["index"] for w in timeline] == [0, 1]
    for w in timeline:
        assert w["calls"] == 1 and w["submit_s"] <= w["start_s"] + 0.05   # clocks: one host
        assert w["start_s"] <= w["end_s"] <= w["received_s"] <= w["call_s"] + 1e-6
        assert w["kernel_s"] > 0 and w["scatter_s"] > 0
        assert w["result_transfer_s"] > 0       # the kept results, read once by the check
    scaling = doc["cluster"]["scaling"]
    assert [row["workers"] for row in scaling] == [1, 2]
    assert scaling[0]["parallel_efficiency"] == pytest.approx(1.0)
    assert scaling[1]["parallel_efficiency"] == pytest.approx(
        runs[0]["timing_s"]["total"] / (2 * runs[1]["timing_s"]["total"]))
    assert {w["host"] for w in doc["cluster"]["workers"]} and doc["cluster"]["client_versions"][
        "distributed"] == distributed.__version__


def test_cli_profile_shards_the_database(cluster, tmp_path):
    pytest.importorskip("pyhmmer")
    c, _ = cluster
    out = tmp_path / "p.json"
    code = cli.main(["run", "--workload", "profile", "-d", "proteins-2e5", "--model", "PF02826",
                     "--kind", "ssv,msv", "-b", "profile-numpy", "--repeat", "1",
                     "--cluster", c.scheduler_address, "--json", str(out), "-q"])
    assert code == 0
    runs = results.load(out)["runs"]
    assert [(r["kind"], r["status"], r["workers"]) for r in runs] == [("ssv", "ok", 2),
                                                                      ("msv", "ok", 2)]
    stages = runs[0]["info"]["worker_stages"]
    assert sum(w["items"] for w in stages) == runs[0]["pairs"]


def test_profile_shards_stay_resident_on_each_worker(cluster):
    """Every model and kind, every call, reuses the worker's resident slice: one upload each."""
    pytest.importorskip("pyhmmer")
    from hmmbench.cluster.sharded import sharded_values
    from hmmbench.options import run_options
    _, client = cluster
    profile, name = workload.get("profile"), "profile-opencl-task"
    values = dict(dataset=["proteins-2e4"], model=["PF02826", "LuxC"], kind=["ssv", "msv"],
                  backend=[name])
    backends = select(values["backend"], "profile")
    if backends[0].unavailable_reason():
        pytest.skip(backends[0].unavailable_reason())
    cells, _ = profile.plan(run_options(values, profile), backends)
    for cell in cells:
        for _ in range(2):
            sharded_values(client, profile, name, cell, 2, mode="whole", args=values)

    def uploads():
        from hmmbench.cluster import worker
        return [b.runner().resident.loads for key, b in worker._BACKENDS.items()
                if key == ("profile", name)]
    assert list(client.run(uploads).values()) == [[1], [1]]


def test_backend_shards_only_on_workers_that_can_run_it(cluster, monkeypatch):
    """A worker that cannot run a backend gets none of its shards and is named with the reason;
    a backend too few workers can run is unavailable, saying why."""
    from hmmbench.cluster.connect import wait_for_workers
    from hmmbench.cluster.sharded import ClusterDataset, Session, ShardedBackend
    _, client = cluster
    ds = _dataset("equal-48@200")
    good, picky = _backend("numpy-f32"), _backend("numpy")
    session = Session(client, PAIRHMM, {"dataset": [ds.name], "backend": ["numpy-f32"]})
    workers = wait_for_workers(client, 2, 30)
    session.probe(workers, [good, picky])
    # as if the second worker had no driver for "numpy"
    session.probes[workers[1]]["backends"]["numpy"]["reason"] = "no toy driver"
    session.use(1)
    only = ShardedBackend(picky, session)
    assert only.workers == [workers[0]] and only.unavailable_reason() is None
    session.use(2)
    both, one = ShardedBackend(good, session), ShardedBackend(picky, session)
    assert both.unavailable_reason() is None
    assert "needs 2 workers" in one.unavailable_reason()
    assert "no toy driver" in one.unavailable_reason()
    cds = ClusterDataset(ds, session)
    values = np.concatenate([both.run(p.with_mode("merged")).log10 for p in cds.chunks()])
    assert np.array_equal(values, good.run(ds.load()).log10)
    session.release()


def test_workers_switch_the_gil_often_while_shards_run_and_as_before_after(cluster):
    """While shards run (a registered worker plugin) the GIL changes hands every 0.5 ms on the
    workers; afterwards it is Python's default again."""
    from hmmbench.cluster.settings import TASK_SWITCH_INTERVAL, quiet_workers
    _, client = cluster
    before = client.run(sys.getswitchinterval)
    assert set(before.values()) == {0.005}
    with quiet_workers(client) as quiet:
        assert quiet and set(client.run(sys.getswitchinterval).values()) == {TASK_SWITCH_INTERVAL}
    assert client.run(sys.getswitchinterval) == before


def test_local_workers_keep_the_allocators_defaults(cluster):
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in every worker it spawns (the fixture's plain
    LocalCluster has it); that maps and unmaps every large NumPy temporary (a host path 3x
    slower). The local cluster hmmbench starts leaves it unset, also after another cluster set
    it in this process's environment."""
    from hmmbench.cluster.connect import TRIM_ENV, connect
    from hmmbench.cluster.settings import scheduler_stealing, worker_profilers

    def trim():
        return os.environ.get(TRIM_ENV)
    _, plain = cluster
    assert all(plain.run(trim).values())
    with connect("local", 1, 60) as (client, kind):
        assert kind == "processes" and list(client.run(trim).values()) == [None]
        # ... and starts its scheduler without work stealing, its workers without profilers
        assert scheduler_stealing(client) is False
        assert list(worker_profilers(client).values()) == [False]
    assert scheduler_stealing(plain) is True and set(worker_profilers(plain).values()) == {True}


# --- fleet mode ------------------------------------------------------------------------------
def test_fleet_one_row_per_worker_per_cell(cluster, tmp_path, capsys):
    c, _ = cluster
    out = tmp_path / "f.json"
    code = cli.main(["run", "-d", "equal-32@64", "-d", "equal-64@32", "-b", "numpy-f32",
                     "--repeat", "1", "--cluster", c.scheduler_address, "--fleet",
                     "--json", str(out), "-q"])
    assert code == 0
    doc = results.load(out)
    rows = [(r["dataset"], r["worker"]) for r in doc["runs"]]
    assert sorted(rows) == sorted((d, w) for d in ("equal-32@64", "equal-64@32")
                                  for w in ("0", "1"))
    assert all(r["status"] == "ok" and r["host"] for r in doc["runs"])
    capsys.readouterr()
    assert cli.main(["report", str(out), "--pivot", "gcups_kernel"]) == 0
    pivot = capsys.readouterr().out
    assert "numpy-f32 @0/" in pivot and "numpy-f32 @1/" in pivot
    assert cli.main(["compare", str(out), str(out)]) == 0        # rows matched worker by worker
    assert capsys.readouterr().out.count("numpy-f32 @") >= 4


def test_fleet_worker_checks_its_memory_first(monkeypatch):
    """A fleet worker checks the matrix as ``hmmbench run`` does, against the limit the
    client sends (the worker's), before any set is generated: past it, one line naming the
    worker, the estimate and the limit."""
    from hmmbench.cluster import worker
    from hmmbench.errors import UserError
    from hmmbench.options import run_options
    from hmmbench.pairhmm.datasets import synthetic
    from hmmbench.runner.config import RunConfig
    monkeypatch.setattr(synthetic, "generate_fixed",
                        lambda *a: pytest.fail("generated a set before the memory check"))
    args = {"dataset": ["equal-512@1e4"], "backend": ["numpy"], "repeat": 1}
    opts = run_options(args, PAIRHMM)
    cfg = RunConfig.from_options(opts, PAIRHMM.run_defaults(), PAIRHMM.sample_items)
    with pytest.raises(UserError) as err:
        worker.fleet_run(args, "pairhmm", cfg, [_backend("numpy")], {}, 64 << 20)
    assert str(err.value).startswith("worker local@")
    assert "needs about" in str(err.value) and "the worker's memory limit, 64.0 MiB" in str(
        err.value)


def test_restarted_workers_run_each_row_of_a_scaling_study(cluster, tmp_path, capsys):
    c, _ = cluster
    out = tmp_path / "r.json"
    code = cli.main(["run", "-d", "equal-64@400", "-b", "numpy-f32", "--repeat", "1",
                     "--cluster", c.scheduler_address, "--workers", "1,2",
                     "--restart-workers", "always", "--json", str(out), "-q"])
    assert code == 0
    doc = results.load(out)
    one, two = doc["runs"]
    assert (one["workers"], one["status"], two["workers"], two["status"]) == (1, "ok", 2, "ok")
    first = {w["pid"] for w in one["info"]["worker_stages"]}
    second = {w["pid"] for w in two["info"]["worker_stages"]}
    assert len(first) == 1 and len(second) == 2 and not first & second   # fresh processes
    assert doc["cluster"]["workers_restarted_between_rows"] is True
    assert doc["cluster"]["worker_switch_interval_s"] == 0.0005
    assert "restarting the workers" in capsys.readouterr().err


# --- faults ----------------------------------------------------------------------------------
def test_killed_worker_shards_rerun_elsewhere_with_identical_results(cluster):
    """A real set's shards (10s: each worker computes its half, 7 active regions, for ~0.2 s),
    the victim killed while it computes its own. (Last of the tests on the shared cluster: it
    leaves a restarted worker behind.)"""
    _, client = cluster
    single = _single_values("numpy-f32", "10s")
    got, session, sb, cds = _sharded_values(client, "numpy-f32", _dataset("10s"))
    assert np.array_equal(got, single)
    victim = session.active[1]
    pid = session.probes[victim]["pid"]

    def kill_when_busy():                  # the moment the victim is computing its shard
        deadline = time.time() + 60
        while time.time() < deadline:
            if any("run_piece" in str(key) for key in client.processing([victim]).get(victim,
                                                                                     ())):
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.02)
    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    again = np.concatenate([sb.run(p.with_mode("original")).log10 for p in cds.chunks()])
    killer.join()
    assert np.array_equal(again, single)
    moved = session.retried
    assert [(x["shard"], x["planned"]) for x in moved] == [(1, victim)]
    assert moved[0]["ran_on"] != victim
    session.release()


# --- usage errors and the embedded default -----------------------------------------------------
def test_unreachable_scheduler_fails_fast(capsys):
    t0 = time.perf_counter()
    code = cli.main(["run", "-d", "equal-32@8", "-b", "numpy-f32", "--cluster",
                     "tcp://127.0.0.1:9", "--cluster-timeout", "2"])
    assert code == 2 and time.perf_counter() - t0 < 15
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hmmbench: error: --cluster tcp://127.0.0.1:9")


@pytest.mark.parametrize("argv, message", [
    (["--cluster", "nowhere"], "expected 'local' or a scheduler address"),
    (["--fleet"], "--fleet needs --cluster"),
    (["--workers", "1,2"], "--workers needs --cluster"),
    (["--gather", "call"], "--gather needs --cluster"),
    (["--restart-workers", "always"], "--restart-workers needs --cluster"),
    (["--cluster", "local", "--fleet", "--restart-workers", "never"], "applies to shard mode"),
    (["--cluster", "local", "--fleet", "--gather", "call"], "applies to shard mode"),
    (["--cluster", "local", "--fleet", "--workers", "1,2"], "one worker count"),
    (["--cluster", "local", "--workers", "0,2"], "--workers '0,2'"),
])
def test_bad_cluster_options_exit_2(argv, message, capsys, tmp_path):
    out = tmp_path / "x.json"
    code = cli.main(["run", "-d", "equal-32@8", "-b", "numpy-f32", "--json", str(out), *argv])
    assert code == 2 and not out.exists()
    assert message in capsys.readouterr().err


def test_without_cluster_nothing_of_dask_is_imported(tmp_path):
    script = ("import sys\nfrom hmmbench import cli\n"
              f"code = cli.main(['run', '-d', 'equal-32@16', '-b', 'numpy-f32', '--repeat', '1', "
              f"'-q', '--json', {str(tmp_path / 'r.json')!r}])\n"
              "assert code == 0, code\n"
              "bad = [m for m in ('dask', 'distributed', 'dask_cuda') if m in sys.modules]\n"
              "assert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_ctrl_c_stops_the_local_cluster_and_writes_nothing(tmp_path):
    out = tmp_path / "never.json"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "hmmbench", "run", "-d", "chunks@20000",
                             "-b", "numpy", "--max-time", "60", "--cluster", "local",
                             "--workers", "2", "--json", str(out)], cwd=REPO, env=env,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stderr:                   # the workers are up, the shards sent
            if line.startswith("cluster: sharding over"):
                break
        children = _children(proc.pid)
        assert children, "no worker processes found"
        start, deadline = _cpu_seconds(children), time.time() + 30
        while _cpu_seconds(children) - start < 0.3 and time.time() < deadline:
            time.sleep(0.05)                       # until the workers compute their shards
        os.killpg(proc.pid, signal.SIGINT)             # what a terminal's Ctrl-C does
        rest = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, rest
    assert "hmmbench: interrupted" in rest and "Traceback" not in rest
    assert not out.exists()
    deadline = time.time() + 20
    while time.time() < deadline and any(_alive(p) for p in children):
        time.sleep(0.2)
    assert not any(_alive(p) for p in children)


def _children(pid: int) -> list:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True).stdout
    return [int(x) for x in out.split()]


def _cpu_seconds(pids: list) -> float:
    """The CPU time (user and system) the processes have used so far, from /proc."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])          # utime, stime: fields 14 and 15
    return total / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split()[2] != "Z"


def test_a_local_workers_failed_heartbeat_is_not_logged_on_the_way_out():
    """The worker preload drops distributed.worker's heartbeat failure (the local scheduler
    stopped with the client, on Ctrl-C) and keeps every other record of that logger."""
    import logging
    from hmmbench.cluster import worker

    def record(msg):
        return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, msg, (), None)
    assert not worker._no_heartbeat_failure(
        record("Failed to communicate with scheduler during heartbeat."))
    assert worker._no_heartbeat_failure(record("Compute Failed"))


def test_worker_stages_are_the_timed_passes_medians():
    """A sharded cell's per-worker stages: medians over the record's last ``repeats`` passes,
    not the checked pass nor the warm-up passes before them."""
    import statistics
    from types import SimpleNamespace
    from hmmbench.backend import STAGES
    from hmmbench.cluster.timeline import worker_stages

    def one_pass(wall):
        return {0: {"index": 0, "worker": "0", "host": "h", "pid": 1, "device": "d", "items": 5,
                    "cells": 50, "launches": 1, "wall": wall, "task": wall + 1,
                    **{st: wall / 2 for st in STAGES}}}
    record = SimpleNamespace(dataset_sha256="s", chunking="merged", backend="b", repeats=3)
    walls = [9.0, 7.0, 7.0, 1.0, 2.0, 3.0]   # checked, two warm-up, three timed
    session = SimpleNamespace(stats={("s", "merged", "b"): [one_pass(w) for w in walls]})
    (row,) = worker_stages(session, record)
    assert row["wall"] == 2.0 and row["task"] == 3.0 and row["kernel"] == 1.0
    record.repeats = 0   # no timed pass (a failed cell): every pass but the checked one
    assert worker_stages(session, record)[0]["wall"] == statistics.median(walls[1:])


def test_cluster_options_are_one_frozen_object_built_by_the_cli():
    """The CLI turns the flags into ClusterOptions once; nothing under hmmbench/cluster reads
    an argparse namespace."""
    import argparse
    import dataclasses
    from hmmbench.cli import cluster_args
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", action="append", default=[])
    cluster_args.add_arguments(parser)
    args = parser.parse_args(["--dataset", "1m", "--cluster", "tcp://head:8786",
                              "--workers", "4,1,2", "--gather", "call"])
    opts = cluster_args.cluster_options(args)
    assert (opts.address, opts.worker_counts, opts.largest, opts.gather, opts.fleet) == (
        "tcp://head:8786", (1, 2, 4), 4, "call", None)
    assert dict(opts.run_options) == {"dataset": ["1m"]}      # the cluster's own flags left out
    assert not opts.local and not opts.restarts_between_rows   # a user's scheduler: never unasked
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.gather = "cell"
    with pytest.raises(TypeError):
        opts.run_options["dataset"] = ["10s"]
    assert cluster_args.cluster_options(parser.parse_args([])) is None
    import re
    for path in (REPO / "hmmbench" / "cluster").glob("*.py"):
        text = path.read_text()
        assert "argparse" not in text and not re.search(r"\bargs\.", text), path.name
