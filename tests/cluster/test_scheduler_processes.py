"""The multi-host path as a user runs it: ``dask scheduler`` and ``dask worker`` started as
separate processes on tcp://127.0.0.1, and ``hmmbench run --cluster tcp://...``. Shard and fleet
modes on NumPy and OpenCL (CPU) give one process's results; a worker without OpenCL gets no
OpenCL shards and the record says why; a worker killed mid-run has its shards rerun elsewhere
and the record says which; a killed scheduler is one error line, exit 2 and no file.

Every process is started in its own session and killed (SIGKILL to its group) in a finally;
every wait is bounded."""
from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hmmbench import cli, results, workload
from hmmbench.pairhmm import datasets as pairhmm_datasets
from hmmbench.registry import select

distributed = pytest.importorskip("distributed", reason="pip install 'hmmbench[dask]'")
REPO = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).with_name("dask")
PAIRHMM = workload.get("pairhmm")
OPENCL = "opencl-inter-tile8"
#: Intel's OpenCL CPU runtime (scripts/install_opencl_cpu.sh)
OPENCL_CPU = "Intel"
#: what the docs tell users to start a scheduler with (shard mode's settings, by configuration)
SCHEDULER_ENV = {"DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING": "False"}
WORKER_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
              "HMMBENCH_OPENCL_DEVICE": OPENCL_CPU, "PYTHONPATH": str(REPO)}
START_TIMEOUT = 60
#: How often each process checks its event loop (Dask: every 20 ms, ~1% of a core per idle
#: process over the module's life); nothing the tests read depends on it.
IDLE_CHECKS = {"DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """A scheduler and workers started as a user starts them, each in its own session."""

    def __init__(self, tmp: Path):
        self.tmp, self.procs = tmp, {}
        self.address = f"tcp://127.0.0.1:{free_port()}"

    def _start(self, name: str, argv: list, env: dict) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "w")
        proc = subprocess.Popen(argv, env={**os.environ, **IDLE_CHECKS, **env}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=self.tmp)
        log.close()
        self.procs[name] = proc
        return proc

    def scheduler(self) -> None:
        port = self.address.rsplit(":", 1)[1]
        self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", port,
                                  "--no-dashboard"], SCHEDULER_ENV)

    def worker(self, name: str, **env) -> None:
        self._start(name, [str(DASK), "worker", self.address, "--name", name, "--nworkers", "1",
                           "--nthreads", "1", "--no-nanny", "--no-dashboard",
                           "--host", "127.0.0.1", "--death-timeout", "60"],
                    {**WORKER_ENV, **env})

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def close(self) -> None:
        for name in list(self.procs):
            try:
                self.kill(name)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")[-3000:]


def _client(address: str, n: int):
    client = distributed.Client(address, timeout=START_TIMEOUT, set_as_default=False)
    client.wait_for_workers(n, timeout=START_TIMEOUT)
    return client


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """A scheduler, two workers with everything, and one without an OpenCL runtime (its ICD
    loader finds no platform: a host where the OpenCL backend's dependencies are missing)."""
    tmp = tmp_path_factory.mktemp("dask")
    empty = tmp / "no-opencl-vendors"
    empty.mkdir()
    ps = Processes(tmp)
    try:
        ps.scheduler()
        for name in ("w0", "w1"):
            ps.worker(name)
        ps.worker("w2", OCL_ICD_VENDORS=str(empty))
        try:
            client = _client(ps.address, 3)
        except Exception:
            pytest.fail("the hand-started cluster did not come up:\n"
                        + "\n".join(ps.log(n) for n in ps.procs))
        with client:
            yield ps, client
    finally:
        ps.close()


_SINGLE: dict = {}


def _single_values(backend: str, name: str) -> np.ndarray:
    """One process's results, launch by launch as the runner runs them (computed once)."""
    if (backend, name) not in _SINGLE:
        b, ds = select([backend])[0], pairhmm_datasets.resolve(name)
        assert b.unavailable_reason() is None, b.unavailable_reason()
        _SINGLE[backend, name] = np.concatenate(
            [b.run(u).log10 for u in PAIRHMM.launches(ds.load(), "original")])
    return _SINGLE[backend, name]


def _run(argv: list, out: Path) -> dict:
    assert cli.main(["run", *argv, "--repeat", "1", "--json", str(out), "-q"]) == 0
    return results.load(out)


@pytest.mark.parametrize("backend, workers", [("numpy-f32", 3), (OPENCL, 2)])
def test_shards_on_worker_processes_give_one_process_results(hosts, backend, workers,
                                                             monkeypatch):
    """The client's view of a hand-started cluster: every worker's shards joined are one
    process's values, bit for bit."""
    from hmmbench.cluster.sharded import sharded_values
    monkeypatch.setenv("HMMBENCH_OPENCL_DEVICE", OPENCL_CPU)
    _, client = hosts
    single = _single_values(backend, "tiny")
    got, session, _, _ = sharded_values(client, PAIRHMM, backend, pairhmm_datasets.resolve("tiny"),
                                        workers)
    assert np.array_equal(got, single)
    assert len(session.current.shard_sizes) == workers
    assert [session.probes[w]["name"] for w in session.active] == ["w0", "w1", "w2"][:workers]
    session.release()


@pytest.mark.parametrize("gather", ["cell", "call"])
def test_cli_shard_mode_over_tcp_names_the_worker_without_opencl(hosts, tmp_path, monkeypatch,
                                                                 capsys, gather):
    monkeypatch.setenv("HMMBENCH_OPENCL_DEVICE", OPENCL_CPU)
    ps, _ = hosts
    doc = _run(["-d", "tiny", "-b", OPENCL, "--cluster", ps.address, "--gather", gather],
               tmp_path / "s.json")
    (run,) = doc["runs"]
    assert (run["status"], run["workers"], run["n_over_tol"]) == ("ok", 2, 0)
    assert run["n_checked"] == run["pairs"]
    assert [w["worker"] for w in run["info"]["worker_stages"]] == ["w0", "w1"]
    cluster = doc["cluster"]
    assert cluster["address"] == ps.address and cluster["kind"] == "scheduler"
    # the worker without an OpenCL platform: no shards, and why
    (label,) = cluster["excluded"]
    assert label.startswith("w2@") and "OpenCL" in cluster["excluded"][label]
    assert "gets no shards" in capsys.readouterr().err
    # started as the docs say: no work stealing, no profilers
    assert cluster["work_stealing"] is False and cluster["worker_profilers"] == []
    timeline = run["info"]["worker_timeline"]
    assert [w["index"] for w in timeline] == [0, 1] and cluster["gather"] == gather
    # kept results are read once, by the check; results sent with every call need no read
    assert all((w["result_transfer_s"] is not None) == (gather == "cell") for w in timeline)


def test_cli_fleet_over_tcp_matches_one_process(hosts, tmp_path, monkeypatch):
    monkeypatch.setenv("HMMBENCH_OPENCL_DEVICE", OPENCL_CPU)
    ps, _ = hosts
    argv = ["-d", "tiny", "-b", "numpy-f32", "-b", OPENCL]
    alone = {r["backend"]: r for r in _run(argv, tmp_path / "one.json")["runs"]}
    doc = _run(argv + ["--cluster", ps.address, "--fleet", "--workers", "2"],
               tmp_path / "f.json")
    rows = {(r["backend"], r["worker"]): r for r in doc["runs"]}
    assert sorted(rows) == sorted((b, w) for b in alone for w in ("w0", "w1"))
    for (b, _), r in rows.items():
        assert r["status"] == "ok" and r["n_checked"] == alone[b]["n_checked"] > 0
        assert r["max_abs_err"] == alone[b]["max_abs_err"]      # the same values, to the bit


def test_killed_worker_shards_rerun_elsewhere_and_the_record_says_so(hosts, tmp_path):
    """SIGKILL to a worker (no nanny: it stays dead) while it computes its shard: Dask
    reschedules the lost tasks and rebuilds the shard on a live worker; the run's checks all
    pass and ``shards_retried`` names the victim. The last test that needs w1 (the last one on
    the module's cluster kills its scheduler)."""
    ps, client = hosts
    victim = next(a for a, w in client.scheduler_info(n_workers=-1)["workers"].items()
                  if w["name"] == "w1")
    done = threading.Event()

    def kill_when_busy():
        deadline = time.time() + 90
        while time.time() < deadline and not done.is_set():
            busy = client.processing([victim]).get(victim, ())
            if any("run_piece" in str(key) for key in busy):
                ps.kill("w1")
                return
            time.sleep(0.01)
    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    try:
        doc = _run(["-d", "equal-64@600", "-b", "numpy-f32", "--cluster", ps.address,
                    "--workers", "2"], tmp_path / "k.json")
    finally:
        done.set()
        killer.join(timeout=10)
    assert ps.procs["w1"].poll() is not None, "the worker was never seen busy"
    (run,) = doc["runs"]
    assert run["status"] == "ok" and run["n_over_tol"] == 0 and run["n_checked"] == 600
    moved = doc["cluster"]["shards_retried"]
    assert moved and {x["planned"] for x in moved} == {victim}
    assert all(x["ran_on"] != victim for x in moved)
    assert run["info"]["shards_retried"] == moved


def test_a_scheduler_lost_while_this_process_is_busy_is_one_line(tmp_path):
    """The client gives up reconnecting after the timeout, from Dask's own thread, whatever this
    one is doing (a loaded machine: busy past it); that report is not a second line: the lost
    scheduler is said once, by the UserError; nor are the INFO records of the comms the client
    closes ("Batched Comm Closed", with a traceback)."""
    from hmmbench.cluster.connect import connect
    from hmmbench.errors import UserError
    import logging
    shown = []                  # what reaches distributed's handlers (stderr's), from any logger
    seen = logging.Handler()
    seen.emit = lambda record: shown.append(record.getMessage())
    logging.getLogger("distributed").addHandler(seen)
    ps = Processes(tmp_path)
    try:
        ps.scheduler()
        with distributed.Client(ps.address, timeout=START_TIMEOUT, set_as_default=False):
            pass                                # the scheduler is up
        with pytest.raises(UserError, match="lost the Dask scheduler mid-run"):
            with connect(ps.address, timeout=1) as (client, _):
                ps.kill("scheduler")
                # what the client's batched stream logs when the kill lands mid-write (a race
                # a run under load loses now and then), said here as Dask says it
                logging.getLogger("distributed.batched").info(
                    "Batched Comm Closed <TCP (closed) Client->Scheduler>")
                deadline = time.time() + 30    # busy here until the client has given up
                while client.status != "closed" and time.time() < deadline:
                    time.sleep(0.1)
                assert client.status == "closed"
    finally:
        ps.close()
        logging.getLogger("distributed").removeHandler(seen)
    assert not [m for m in shown if "reconnect" in m or "Comm Closed" in m], shown


class _Client:
    """A client whose status turns to "connecting" (the scheduler's stream read its end)
    ``after`` seconds from now, or never."""

    def __init__(self, after=None):
        self.lost_at = None if after is None else time.monotonic() + after

    @property
    def status(self):
        lost = self.lost_at is not None and time.monotonic() >= self.lost_at
        return "connecting" if lost else "running"


def test_a_comm_error_before_the_client_sees_the_loss_is_the_loss(monkeypatch):
    """A call's comm error can arrive before the client's stream reads the scheduler's end (a
    loaded machine): it counts as the loss when the client says so within the grace; any other
    error, or a comm error while the scheduler stays, stays the call's own."""
    from hmmbench.cluster import connect
    monkeypatch.setattr(connect, "LOST_GRACE_S", 0.5)
    comm_error = distributed.comm.core.CommClosedError("in <TCP (closed) ConnectionPool.gather>")
    assert connect.failed_on_lost_scheduler(_Client(after=0.2), comm_error)
    assert not connect.failed_on_lost_scheduler(_Client(after=0.2), ValueError("a bug"))
    assert not connect.failed_on_lost_scheduler(_Client(), comm_error)
    assert connect.failed_on_lost_scheduler(_Client(after=0), ValueError("anything"))


def test_killed_scheduler_is_one_error_line_and_no_file(hosts, tmp_path):
    """The module's scheduler killed while ``hmmbench run`` computes its shards on the workers
    left (w0 and w2). Last on the module's cluster and in the file: this process's client of it
    is closed first (its reconnect attempts would log into the tests after it)."""
    ps, client = hosts
    out = tmp_path / "never.json"
    client.close()
    proc = subprocess.Popen(
        # a fixed count no run reaches in the test's time: the kill always lands mid-run
        [sys.executable, "-m", "hmmbench", "run", "-d", "equal-64@400", "-b", "numpy-f32",
         "--repeat", "1000000", "--cluster", ps.address, "--cluster-timeout", "5",
         "--json", str(out)], cwd=REPO, env={**os.environ, **WORKER_ENV,
                                             "PYTHONUNBUFFERED": "1"},
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True)
    reader.start()
    try:
        deadline = time.time() + START_TIMEOUT
        while not lines.get(timeout=max(0.1, deadline - time.time())).startswith(
                "cluster: sharding over"):         # then the shards are being computed
            pass
        time.sleep(0.5)
        ps.kill("scheduler")
        proc.wait(timeout=60)
        reader.join(timeout=10)
        rest = "".join(lines.get_nowait() for _ in range(lines.qsize()))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    # after the kill: one line, nothing logged by Dask's client, no cell recorded as an error
    after = rest.strip().splitlines()
    assert len(after) == 1, rest
    (line,) = after
    assert proc.returncode == 2, rest
    assert line.startswith(f"hmmbench: error: --cluster {ps.address}: lost the Dask scheduler")
    assert not out.exists() and not list(tmp_path.glob("never.json*"))
