"""hmmbench.cluster.connect on a Ctrl-C, without Dask processes: the client and the local
cluster get a short close, then the worker processes still running are stopped."""
from __future__ import annotations

import multiprocessing
import signal
import time

import pytest

from hmmbench.cluster import connect as conn

pytest.importorskip("distributed", reason="Dask distributed not installed (pip install 'hmmbench[dask]')")


def _stubborn(ready) -> None:
    """A worker that ignores SIGTERM too (a task the nanny's terminate does not stop)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ready.set()
    time.sleep(60)


class _Closing:
    """A client or cluster whose close times out, recording the timeout it was given."""

    def __init__(self, *args, **kwargs):
        self.timeouts = []
        self.status = "running"

    def close(self, timeout=None):
        self.timeouts.append(timeout)
        raise TimeoutError("still closing")


@pytest.fixture
def closing(monkeypatch):
    """(cluster, clients): what connect("local") starts, each close timing out."""
    cluster, clients = _Closing(), []
    monkeypatch.setattr(conn, "start_local", lambda n, timeout: (cluster, "processes"))
    monkeypatch.setattr(conn.import_distributed(), "Client",
                        lambda *a, **k: clients.append(_Closing()) or clients[-1])
    return cluster, clients


def test_ctrl_c_closes_briefly_and_stops_the_workers_left(closing):
    cluster, clients = closing
    fork = multiprocessing.get_context("fork")
    ready = fork.Event()
    worker = fork.Process(target=_stubborn, args=(ready,), daemon=True)
    worker.start()
    assert ready.wait(10)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with conn.connect("local", 2, timeout=30):
            raise KeyboardInterrupt
    assert clients[0].timeouts == [conn.INTERRUPTED_CLOSE_S]
    assert cluster.timeouts == [conn.INTERRUPTED_CLOSE_S]
    assert not worker.is_alive() and worker.exitcode == -signal.SIGKILL
    assert time.monotonic() - started < 10


def test_without_ctrl_c_the_users_timeout_and_no_process_stopped(closing):
    cluster, clients = closing
    worker = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,),
                                                         daemon=True)
    worker.start()
    try:
        with conn.connect("local", 2, timeout=30):
            pass
        assert clients[0].timeouts == [30] and cluster.timeouts == [30]
        assert worker.is_alive()
    finally:
        worker.kill()
        worker.join()
