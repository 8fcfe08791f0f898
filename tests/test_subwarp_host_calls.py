"""cuda-subwarp's host path without a GPU: a recording stand-in for the CUDA driver runs run()'s
control flow (no kernel computes anything) and proves what a repeated call no longer pays for --
no device or page-locked allocation, no event creation, no compilation -- and that the kernel
time is the union of the launches' own event spans."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from hmmbench.apis import cuda as glue
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches


class FakeDriver:
    """The pycuda.driver calls run() makes; events get a fake clock (1 ms per record)."""

    def __init__(self):
        self.calls = Counter()
        self.clock = 0.0
        self.launch_spans = []

    class _Alloc(int):
        def free(self):
            pass

    def mem_alloc(self, nbytes):
        self.calls["mem_alloc"] += 1
        return self._Alloc(0x1000 * (self.calls["mem_alloc"] + 1))

    def pagelocked_empty(self, n, dtype):
        self.calls["pagelocked_empty"] += 1
        return np.zeros(n, dtype)

    def Event(self):  # noqa: N802 - pycuda's name
        self.calls["Event"] += 1
        drv = self

        class _Event:
            t = None

            def record(self, stream=None):
                drv.clock += 1.0
                self.t = drv.clock

            def time_since(self, other):
                return self.t - other.t

            def synchronize(self):
                pass
        return _Event()

    def Stream(self):  # noqa: N802
        self.calls["Stream"] += 1

        class _Stream:
            def wait_for_event(self, ev):
                pass
        return _Stream()

    def memcpy_htod_async(self, dst, src, stream):
        self.calls["h2d"] += 1

    def memset_d32_async(self, *args):
        self.calls["memset"] += 1

    def memcpy_dtoh_async(self, dst, src, stream):
        self.calls["d2h"] += 1

    class function_attribute:  # noqa: N801
        MAX_DYNAMIC_SHARED_SIZE_BYTES = 0


class FakeFunction:
    def __init__(self, drv):
        self.drv = drv

    def prepare(self, signature):
        pass

    def set_attribute(self, *args):
        pass

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.drv.calls["launch"] += 1
        self.drv.clock += 0.5   # the kernel runs between its begin and end events


@pytest.fixture
def fake_cuda(monkeypatch):
    drv = FakeDriver()

    class Module:
        def get_function(self, name):
            return FakeFunction(drv)

    def compile(source, defines=None, options=()):  # noqa: A001
        drv.calls["compile"] += 1
        return Module()
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "compile", compile)
    monkeypatch.setattr(glue, "device_attributes", lambda: {
        "name": "Fake H100", "sm_count": 132, "arch": "sm_90", "compute_capability": "9.0"})
    monkeypatch.setattr(glue, "sm_clock_mhz", lambda: 1980)
    return drv


def test_repeated_calls_allocate_create_and_compile_nothing(fake_cuda):
    regions = launches(resolve("shape-100x150@2000").load(), "original")   # 125 small regions
    b = sw.backends()[0]
    first = [b.run(p) for p in regions]
    after_first = Counter(fake_cuda.calls)
    again = [b.run(p) for p in regions]
    spent = fake_cuda.calls - after_first
    for what in ("mem_alloc", "pagelocked_empty", "Event", "Stream", "compile"):
        assert spent[what] == 0, what
    assert spent["launch"] == after_first["launch"] and spent["h2d"] == len(regions)
    assert [len(e.log10) for e in again] == [p.n_pairs for p in regions]
    # the results are copies: the next call's page-locked buffer does not overwrite them
    assert not np.shares_memory(again[0].log10, again[1].log10)
    assert first[0].info["gpu"] == "Fake H100"


def test_kernel_time_is_the_union_of_launch_spans(fake_cuda):
    pairs = resolve("shape-100x150@3000").load()
    b = sw.backends()[0]
    b.chunk_pairs = 1000       # three chunks, staged by worker threads
    ex = b.run(pairs)
    assert ex.info["chunks"] == 3 and len(ex.log10) == pairs.n_pairs
    # fake clock: each launch lasts 0.5 ms between its events, events themselves 1 ms apart;
    # the layout group spans its three launches and memset
    k = ex.timing["kernel"]
    assert 0 < k < ex.info["kernel_span_s"] <= ex.info["gpu_span_s"]
    assert ex.info["float32_kernel_s"] <= k
    b.close()
