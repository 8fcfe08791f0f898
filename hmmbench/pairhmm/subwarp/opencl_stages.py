"""The stages of an ``opencl-subwarp`` call from its commands' OpenCL profiling events (the
queues are profiled): each command's [START, END] on the device.

- h2d: the union of the uploads' spans;
- kernel: the union of every kernel's span (layout, bins, recompute) -- the GPU's kernels and
  nothing else: where the device waited for the host's next launch, or for an upload between two
  kernels, lies in no kernel's span; bins on side queues overlap and count once;
- d2h: the copy back's span.

``kernel_span_s`` (first kernel's start .. last kernel's end, gaps included) and ``gpu_span_s``
(first upload's start .. the copy back's end) go to ``info`` beside them. The CUDA twin's small
call measures its kernel stage as the span from its upload's end to its last kernel's end
(events around a CUDA graph: docs/subwarp-host-path.md, "How a call's kernel time is measured").
"""
from __future__ import annotations

from typing import Sequence

from ...apis.opencl import cl_module


def busy_seconds(spans) -> float:
    """Seconds covered by the union of (start, end) nanosecond spans, in any order."""
    total, prev_end = 0, 0
    for t0, t1 in sorted(spans):
        total += max(0, t1 - max(t0, prev_end))
        prev_end = max(prev_end, t1)
    return total * 1e-9


def read_spans(events: Sequence) -> list:
    """Each finished event's (START, END) ns (``get_profiling_info``: ``ev.profile`` costs ~60
    times as much a value)."""
    info = cl_module().profiling_info
    start, end = info.START, info.END
    return [(ev.get_profiling_info(start), ev.get_profiling_info(end)) for ev in events]


def stage_seconds(ups: Sequence[tuple], kernels: Sequence[tuple], down: tuple) -> dict:
    """The stages (seconds) from (start, end) ns spans: the uploads', every kernel's, the copy
    back's; with ``kernel_span_s`` and ``gpu_span_s``."""
    first = min(t0 for t0, _ in ups) if ups else down[0]
    return {"h2d": busy_seconds(ups), "kernel": busy_seconds(kernels),
            "d2h": busy_seconds([down]),
            "kernel_span_s": (max(t1 for _, t1 in kernels) - min(t0 for t0, _ in kernels)) * 1e-9
            if kernels else 0.0,
            "gpu_span_s": (down[1] - first) * 1e-9}
