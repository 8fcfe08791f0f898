"""The peak memory of one backend call, measured: what the estimates
(:meth:`hmmbench.backend.Backend.memory_need`) are fitted to and tested against. Two measures:
the most NumPy and Python held during the call (tracemalloc), and the growth of the resident
high-water mark (VmHWM) from before the backend exists to the end of its first call, in a
process of its own (a runtime, its kernel builds and a CPU OpenCL device's buffers are outside
tracemalloc's view; tracemalloc's own records would swell the resident size, so never both).

    python -m hmmbench.memory_peak BACKEND CELL {resident,traced}

CELL is a Pair-HMM dataset name, or a profile cell ``DATABASE/MODEL/KIND``. Prints one JSON
line: the estimate (``host``, ``device``, ``note``; a profile cell's also from the database's
name alone, ``named``), ``hwm`` or ``traced``, and ``gpu``; or ``unavailable`` with the reason.
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


def resident_high_water() -> int:
    """This process's peak resident size so far (Linux's VmHWM), in bytes."""
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))


def _on_gpu(backend) -> bool:
    """Whether the backend's device is a GPU (its buffers are then not host memory)."""
    if backend.api == "cuda":
        return True
    kit = getattr(backend, "kit", None)
    if kit is None and hasattr(backend, "runner"):
        kit = getattr(backend.runner(), "kit", None)
    kit = kit() if callable(kit) else kit
    return bool(getattr(kit, "is_gpu", False))


def _pairhmm(cell: str):
    from .pairhmm.datasets import resolve
    from .pairhmm.shape import PairShape
    pairs = resolve(cell).load()
    return "pairhmm", pairs, PairShape.of(pairs), None


def _profile(cell: str):
    from .profile import datasets as pds
    from .profile.job import ProfileSearch
    from .profile.shape import ProfileShape
    db_name, model_name, kind = cell.split("/")
    db = pds.resolve_database(db_name)
    seqs = db.load()
    model, hmm = pds.resolve_model(model_name).load()
    named = (ProfileShape.generated(db.n_cells, model.M, kind)
             if db.kind == "synthetic" else None)
    return ("profile", ProfileSearch(model, seqs, kind, hmm),
            ProfileShape.of(seqs, model.M, kind), named)


def measure(backend_name: str, cell: str, how: str) -> dict:
    """One call of a backend on a cell in this process, measured ``how`` (one of MODES); best
    in a fresh process (:func:`in_own_process`): VmHWM only grows."""
    from .registry import probe, select
    workload, unit, shape, named = (_profile if cell.count("/") == 2 else _pairhmm)(cell)
    before = resident_high_water()
    backend = select([backend_name], workload)[0]
    reason = probe(backend).reason
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


def in_own_process(backend_name: str, cell: str, how: str, env: Optional[dict] = None,
                   timeout: float = 600) -> dict:
    """:func:`measure` in a fresh Python process (``env``: its environment, default this
    one's); a process that fails gives ``unavailable`` with the end of its stderr."""
    out = subprocess.run([sys.executable, "-m", __name__, backend_name, cell, how],
                         capture_output=True, text=True, timeout=timeout,
                         env=env if env is not None else dict(os.environ))
    if out.returncode != 0:
        return {"unavailable": out.stderr.strip()[-300:] or f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[2] not in MODES:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    print(json.dumps(measure(*args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
