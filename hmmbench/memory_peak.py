"""The peak memory of one backend call, measured: what the estimates
(:meth:`hmmbench.backend.Backend.memory_need`) are fitted to and tested against. Three measures:
the most NumPy and Python held during the call (tracemalloc); the growth of the resident
high-water mark (VmHWM, started afresh) from before the backend exists to the end of its
first call, in a process of its own (a runtime, its kernel builds, a CPU OpenCL device's
buffers and pyhmmer's C memory are outside tracemalloc's view; tracemalloc's own records would
swell the resident size, so never both); and a CUDA device's, the most its free memory fell
over the same span (every API's allocations on that device: CUDA's and OpenCL's).

The resident growth is measured from live memory: the registry's one-time discovery (every
backend module imported, the installed packages' entry points read) is done before the
baseline, and the C heap's free pages are handed back to the kernel first (glibc's
``malloc_trim``), so that a call that reuses pages its process freed earlier (the database
generator's temporaries) is not measured smaller than on a host whose heap held fewer.

A cell is what the workload's :meth:`~hmmbench.workload.Workload.measured_unit` reads: a
Pair-HMM dataset name, a profile cell ``DATABASE/MODEL/KIND``.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import sys
import threading
import tracemalloc
from typing import Callable, Optional

MODES = ("resident", "traced", "device")


def traced_peak(call: Callable[[], object]) -> int:
    """The most memory NumPy and Python held during ``call()``, beyond what they held before."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def resident_high_water(field: str = "VmHWM") -> int:
    """This process's peak resident size so far (Linux's VmHWM), or another field of
    /proc/self/status (``VmRSS``: the resident size now), in bytes."""
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field + ":"))


def release_free_heap() -> None:
    """Hands the C heap's free pages back to the kernel (glibc's ``malloc_trim(0)``; nothing
    where the C library has none), so that the resident size is the memory in use."""
    try:
        ctypes.CDLL(None).malloc_trim(ctypes.c_size_t(0))
    except (OSError, AttributeError):
        pass


def reset_high_water() -> int:
    """Starts VmHWM afresh from the resident size now (Linux 4.0's clear_refs 5), the heap's
    free pages released first, so that a peak while the unit was made does not hide the call's;
    returns the baseline its growth is measured from: the resident size now, or the old peak
    where it cannot be reset."""
    release_free_heap()
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return resident_high_water("VmRSS")
    except OSError:
        return resident_high_water()


class DeviceLow:
    """The most a CUDA device's free memory (``cuMemGetInfo``, device-wide) falls below what was
    free when the ``with`` block began: ``peak``, in bytes. A thread of its own samples it every
    ~0.2 ms with the device's primary context current (the one the CUDA backends use: retained
    first, so that its creation is not counted, as the run's check reads the free memory with
    it made); through the driver's C API (ctypes), so that it leaves PyCUDA's context stacks
    alone. Another process's allocations on the device in the meantime count too."""

    def __init__(self, ordinal: Optional[int] = None):
        self._lib = ctypes.CDLL("libcuda.so.1")
        self._dev, self._ctx = ctypes.c_int(), ctypes.c_void_p()
        ordinal = int(os.environ.get("HMMBENCH_CUDA_DEVICE", "0")) if ordinal is None else ordinal
        for rc in (self._lib.cuInit(0), self._lib.cuDeviceGet(ctypes.byref(self._dev), ordinal),
                   self._lib.cuDevicePrimaryCtxRetain(ctypes.byref(self._ctx), self._dev)):
            if rc:
                raise RuntimeError(f"CUDA driver error {rc}")
        self._stop, self._ready = threading.Event(), threading.Event()
        self.start = self.low = 0
        self.peak = 0

    def _free(self) -> int:
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._lib.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
        return free.value

    def _sample(self) -> None:
        self._lib.cuCtxSetCurrent(self._ctx)
        try:
            self.start = self.low = self._free()
            self._ready.set()
            while not self._stop.wait(0.0002):
                self.low = min(self.low, self._free())
            self.low = min(self.low, self._free())
        finally:
            self._lib.cuCtxSetCurrent(ctypes.c_void_p())
            self._ready.set()

    def __enter__(self) -> "DeviceLow":
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = self.start - self.low
        self._lib.cuDevicePrimaryCtxRelease_v2(self._dev)


def _on_gpu(backend) -> bool:
    """Whether the backend's device is a GPU (its buffers are then not host memory)."""
    if backend.api == "cuda":
        return True
    kit = getattr(backend, "kit", None)
    if kit is None and hasattr(backend, "runner"):
        kit = getattr(backend.runner(), "kit", None)
    kit = kit() if callable(kit) else kit
    return bool(getattr(kit, "is_gpu", False))


def measure(workload: str, backend_name: str, cell: str, how: str) -> dict:
    """One call of a backend on a cell in this process, measured ``how`` (one of MODES): the
    estimate (``host``, ``device``, ``note``; a profile cell's also from the database's name
    alone, ``named`` and ``named_device``), ``hwm`` (this process's: a peer program's own process
    is not in it), ``traced`` or ``device_peak``, and ``gpu``; or ``unavailable`` with the
    reason. Best in a fresh process (:func:`in_own_process`): VmHWM only grows, and a CUDA
    backend keeps its device buffers."""
    from .registry import discover, probe, select
    from .workload import get
    unit, shape, named = get(workload).measured_unit(cell)
    discover(workload)          # the registry's one-time imports: the process's, not the call's
    with contextlib.ExitStack() as stack:
        try:
            low = stack.enter_context(DeviceLow()) if how == "device" else None
        except (OSError, RuntimeError) as exc:
            return {"unavailable": f"no CUDA device to measure: {exc}"}
        before = reset_high_water()
        backend = select([backend_name], workload)[0]
        reason = probe(backend).reason or backend.refuse_reason(unit)  # as the run refuses a cell
        if reason:
            return {"unavailable": reason}
        need = backend.memory_need(shape)
        by_name = backend.memory_need(named) if named is not None else need
        out = {"host": need.host, "device": need.device, "note": need.note,
               "named": by_name.host, "named_device": by_name.device}
        if how == "traced":
            out["traced"] = traced_peak(lambda: backend.run(unit))
        else:
            backend.run(unit)
            if how == "resident":
                out["hwm"] = resident_high_water() - before
    if low is not None:
        out["device_peak"] = low.peak
        if backend.api == "cuda":
            from .apis.cuda import fetched_local_bytes
            out["local_bytes"] = {f"{src}:{fn}": n
                                  for (src, fn), n in fetched_local_bytes().items()}
    out["gpu"] = _on_gpu(backend)
    return out


#: :func:`measure` as a fresh process runs it (arguments: workload, backend, cell, how)
_IN_PROCESS = ("import json, sys; from hmmbench.memory_peak import measure; "
               "print(json.dumps(measure(*sys.argv[1:])))")


def in_own_process(workload: str, backend_name: str, cell: str, how: str,
                   env: Optional[dict] = None, timeout: float = 600) -> dict:
    """:func:`measure` in a fresh Python process (``env``: its environment, default this
    one's); a process that fails gives ``unavailable`` with the end of its stderr."""
    if how not in MODES:
        raise ValueError(f"how: one of {MODES}, not {how!r}")
    out = subprocess.run([sys.executable, "-c", _IN_PROCESS, workload, backend_name, cell, how],
                         capture_output=True, text=True, timeout=timeout,
                         env=env if env is not None else dict(os.environ))
    if out.returncode != 0:
        return {"unavailable": out.stderr.strip()[-300:] or f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])
