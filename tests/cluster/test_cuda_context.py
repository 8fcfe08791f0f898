"""The CUDA context across threads (hmmbench.apis.cuda): current in every thread that uses it,
and on no thread's stack once a Dask worker's task is done (PyCUDA aborts a process at exit
when a context is still on some thread's stack). A stand-in driver counts pushes per thread."""
from __future__ import annotations

import threading
import types

import pytest

from hmmbench.apis import cuda
from hmmbench.cluster import worker


class FakeContext:
    def __init__(self):
        self.stacks: dict = {}

    def push(self):
        self.stacks.setdefault(threading.get_ident(), []).append(self)

    def pop(self):
        self.stacks[threading.get_ident()].pop()

    def depth(self) -> int:
        """How often the context is on the calling thread's stack."""
        return len(self.stacks.get(threading.get_ident(), []))

    def anywhere(self) -> int:
        return sum(len(s) for s in self.stacks.values())


@pytest.fixture
def ctx(monkeypatch):
    context = FakeContext()

    class Device:
        def __init__(self, index):
            pass

        def retain_primary_context(self):
            return context

    monkeypatch.setattr(cuda, "_import_pycuda", lambda: types.SimpleNamespace(Device=Device))
    monkeypatch.setattr(cuda, "unavailable_reason", lambda: None)
    monkeypatch.setattr(cuda, "_CTX", {})
    monkeypatch.setattr(cuda, "_THREAD", threading.local())
    monkeypatch.setattr(cuda.atexit, "register", lambda fn: None)
    return context


def in_thread(fn):
    out = {}
    t = threading.Thread(target=lambda: out.update(value=fn()))
    t.start()
    t.join()
    return out["value"]


def test_the_context_is_pushed_once_per_thread_and_popped_by_that_thread(ctx):
    cuda.driver()
    cuda.driver()
    assert ctx.depth() == 1
    assert in_thread(lambda: (cuda.driver(), cuda.driver(), ctx.depth())[-1]) == 1
    cuda.release_thread()
    assert ctx.depth() == 0
    cuda.release_thread()          # nothing left: no second pop
    assert ctx.depth() == 0


def test_worker_tasks_find_the_context_current_and_leave_no_thread_holding_it(ctx):
    @worker.releases_device
    def first_task():              # makes the context (a backend's first run)
        cuda.driver()
        return ctx.depth()

    @worker.releases_device
    def later_task():              # uses it without asking (a backend's kept buffers)
        return ctx.depth()

    assert in_thread(first_task) == 1
    assert in_thread(later_task) == 1
    assert in_thread(later_task) == 1
    assert ctx.anywhere() == 0     # every task's thread popped what it pushed


def test_worker_tasks_without_cuda_touch_no_context(ctx):
    @worker.releases_device
    def numpy_task():
        return 7

    assert in_thread(numpy_task) == 7
    assert ctx.stacks == {} and cuda._CTX == {}
