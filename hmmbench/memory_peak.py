"""The peak memory of one backend call, measured: what the estimates
(:meth:`hmmbench.backend.Backend.memory_need`) are fitted to and tested against. Two measures:
the most NumPy and Python held during the call (tracemalloc), and the growth of the resident
high-water mark (VmHWM, started afresh) from before the backend exists to the end of its
first call, in a process of its own (a runtime, its kernel builds, a CPU OpenCL device's
buffers and pyhmmer's C memory are outside tracemalloc's view; tracemalloc's own records would
swell the resident size, so never both).

A cell is what the workload's :meth:`~hmmbench.workload.Workload.measured_unit` reads: a
Pair-HMM dataset name, a profile cell ``DATABASE/MODEL/KIND``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from typing import Callable, Optional

MODES = ("resident", "traced")


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


def reset_high_water() -> int:
    """Starts VmHWM afresh from the resident size now (Linux 4.0's clear_refs 5), so that a
    peak while the unit was made does not hide the call's; returns the baseline its growth is
    measured from: the resident size now, or the old peak where it cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return resident_high_water("VmRSS")
    except OSError:
        return resident_high_water()


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
    alone, ``named``), ``hwm`` (this process's: a peer program's own process is not in it) or
    ``traced``, and ``gpu``; or ``unavailable`` with the reason.
    Best in a fresh process (:func:`in_own_process`): VmHWM only grows."""
    from .registry import probe, select
    from .workload import get
    unit, shape, named = get(workload).measured_unit(cell)
    before = reset_high_water()
    backend = select([backend_name], workload)[0]
    reason = probe(backend).reason or backend.refuse_reason(unit)  # as the run refuses a cell
    if reason:
        return {"unavailable": reason}
    need = backend.memory_need(shape)
    out = {"host": need.host, "device": need.device, "note": need.note,
           "named": backend.memory_need(named).host if named is not None else need.host}
    if how == "traced":
        out["traced"] = traced_peak(lambda: backend.run(unit))
    else:
        backend.run(unit)
        out["hwm"] = resident_high_water() - before
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
