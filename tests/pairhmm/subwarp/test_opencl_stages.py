"""The stages of an opencl-subwarp call from its events: the kernel stage is the GPU's kernels
and nothing else (the union of their spans), not the span from the first to the last."""
from __future__ import annotations

import time

import numpy as np
import pytest

from cpu_reference.pairhmm import forward_log10
from hmmbench.pairhmm.subwarp.opencl_buffers import Launch
from hmmbench.pairhmm.subwarp.opencl_stages import busy_seconds, stage_seconds
from helpers.opencl_subwarp import DEVICES, needs_device
from helpers.opencl_subwarp import backend as _backend
from helpers.real_data import real_set


def test_the_kernel_stage_is_the_union_of_the_kernels_spans():
    """A device idle between two kernels (waiting for the host's next launch) and two kernels
    on side queues overlapping: the kernel stage counts neither the gap nor the overlap twice;
    the span from the first kernel's start to the last one's end keeps the gap."""
    ups = [(0, 100), (100, 150)]
    kernels = [(150, 200), (200, 260),         # layout
               (300, 400), (350, 420),         # two bins side by side, after a 40 ns gap
               (900, 1000)]                    # a launch the host issued late
    got = stage_seconds(ups, kernels, (1000, 1030))
    assert got["kernel"] == pytest.approx((110 + 120 + 100) * 1e-9)
    assert got["kernel_span_s"] == pytest.approx(850e-9)
    assert got["h2d"] == pytest.approx(150e-9)
    assert got["d2h"] == pytest.approx(30e-9)
    assert got["gpu_span_s"] == pytest.approx(1030e-9)
    assert busy_seconds([(5, 10), (0, 3), (2, 4)]) == pytest.approx(9e-9)


@needs_device
@pytest.mark.parametrize("one_upload", [True, False])
def test_a_host_paced_gap_between_two_launches_is_no_kernel_time(monkeypatch, one_upload):
    """A small call whose host sleeps 0.1 s (after a flush) before its second kernel launch (the
    layout's scan): the device waits for it, and that wait is in the kernels' span but not in
    the kernel stage; the results still agree with the float64 reference."""
    b = _backend(DEVICES[0], "local")
    pairs = real_set("tiny").load()
    ref = forward_log10(pairs, "float64")
    monkeypatch.setattr(b, "side_queues", False)
    monkeypatch.setattr(b, "sequences_after_layout", not one_upload)
    b.run(pairs)  # programs built, buffers sized
    launch, calls = Launch.__call__, []

    def late(self, queue, *args, **kw):
        calls.append(1)
        if len(calls) == 2:
            queue.flush()
            queue.finish()  # the first kernel done: the device now waits for this thread
            time.sleep(0.1)
        return launch(self, queue, *args, **kw)

    monkeypatch.setattr(Launch, "__call__", late)
    ex = b.run(pairs)
    assert len(calls) >= 2
    with np.errstate(invalid="ignore"):
        d = np.where(ex.log10 == ref, 0.0, np.abs(ex.log10 - ref))
    assert float(np.max(d, initial=0.0)) <= 1e-4
    assert 0 < ex.timing["kernel"] < ex.info["kernel_span_s"] - 0.09, \
        (ex.timing, ex.info["kernel_span_s"])
    assert ex.info["gpu_span_s"] >= ex.info["kernel_span_s"]
