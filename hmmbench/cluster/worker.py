"""What runs on a Dask worker: the backend by name, this worker's shards of a dataset (rebuilt
from its name, or received from the client), one piece's launches, and fleet mode's whole
benchmark.

Module-level functions, so that tasks pickle by reference; per-process state (backend objects,
with their device contexts and compiled kernels, and the last rebuilt plan) lives in module
globals and persists between tasks: a worker runs one task at a time on its device.
"""
from __future__ import annotations

import functools
import os
import socket
import sys
import time
import weakref
from dataclasses import replace
from typing import Optional

import numpy as np

from ..options import run_options

#: Environment variables the client passes to every task (the user's device choices).
PASSED_ENV = ("HMMBENCH_OPENCL_DEVICE",)

_BACKENDS: dict = {}
_PLAN: dict = {}          # one entry: (workload, dataset name, args) -> the plan's datasets
#: results kept here until the client reads them (``--gather cell``): per (backend, chunking
#: mode, piece, shard) the latest call's (token, values); a later call of the same piece
#: replaces them, so a worker holds at most one pass of results per backend
_KEPT: dict = {}
#: the Parts this process's workers hold now, per (worker address, id): a dataset placed on
#: several worker sets (backends that run on different workers) puts one Part per set on a
#: worker in more than one, all held until the next dataset; a call is budgeted beside them
_RESIDENT: dict = {}


def releases_device(task):
    """A task that may use the GPU runs with the process's CUDA context current (a later task
    may run on another thread than the one that made it) and leaves none on its thread: PyCUDA
    aborts the worker at exit when a context is still on a thread's stack. Kernels, buffers and
    the resident database live in the context, not on the stack: they stay."""
    def glue():
        return sys.modules.get("hmmbench.apis.cuda")   # loaded once a CUDA backend ran here

    @functools.wraps(task)
    def run(*args, **kwargs):
        if glue() is not None:
            glue().enter_thread()
        try:
            return task(*args, **kwargs)
        finally:
            if glue() is not None:
                glue().release_thread()
    return run


def dask_setup(worker) -> None:
    """Preload hook of the worker processes a local cluster starts. A terminal's Ctrl-C reaches
    the whole process group, but only the client acts on it (it closes the cluster); a worker
    dying on it mid-task would log tracebacks. dask-cuda lists each worker's own GPU first in
    its CUDA_VISIBLE_DEVICES: device 0, whatever HMMBENCH_CUDA_DEVICE the client was given."""
    import logging
    import signal
    import threading
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.pop("HMMBENCH_CUDA_DEVICE", None)
    # The local scheduler lives in the client's process: when a Ctrl-C stops it, a worker's
    # next heartbeat fails before the nanny closes the worker -- the expected end, not an error
    logging.getLogger("distributed.worker").addFilter(_no_heartbeat_failure)


def _no_heartbeat_failure(record) -> bool:
    return not record.getMessage().startswith("Failed to communicate with scheduler during "
                                              "heartbeat")


def passed_env() -> dict:
    return {k: os.environ[k] for k in PASSED_ENV if k in os.environ}


def _apply(env: dict) -> None:
    os.environ.update(env or {})


def whoami() -> dict:
    """This worker's address, name, host and process."""
    try:
        from distributed import get_worker
        w = get_worker()
        addr, name = w.address, str(w.name)
    except (ImportError, ValueError):
        addr, name = "local", "local"
    return {"worker": addr, "name": name, "host": socket.gethostname(), "pid": os.getpid(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def cpus() -> Optional[str]:
    """The CPUs this process may run on, as ranges ("0-15,32-47"): dask-cuda pins each worker
    to its GPU's NUMA node, so two workers may share cores with each other or the client."""
    try:
        ids = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    runs, start = [], 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[i - 1] + 1:
            runs.append(f"{ids[start]}" if i - 1 == start else f"{ids[start]}-{ids[i - 1]}")
            start = i
    return ",".join(runs)


def backend(sent):
    """This process's own instance of a backend the client sent (by value: variants made by
    ``--axis`` exist only there), kept for every later task so that its device context and
    compiled kernels live on."""
    key = (sent.workload, sent.name)
    if key not in _BACKENDS:
        _BACKENDS[key] = sent
    return _BACKENDS[key]


def device_name(b) -> str:
    """A backend's device, asked once per process."""
    key = (b.workload, b.name, "device")
    if key not in _BACKENDS:
        _BACKENDS[key] = str(backend(b).device_name())
    return _BACKENDS[key]


@releases_device
def probe(backends: list, env: dict) -> dict:
    """Whether this worker can run each backend (None) or why not, and on which device."""
    from ..registry import probe as availability
    _apply(env)
    out = {}
    for sent in backends:
        b = backend(sent)
        reason = availability(b).reason
        device = free = None
        if reason is None:
            try:
                device = device_name(b)
            except Exception as exc:  # noqa: BLE001 - a device that cannot name itself
                device = f"unknown ({exc})"
            try:
                free = b.device_memory_free()
            except Exception:  # noqa: BLE001 - no figure: its calls are not checked for it
                free = None
        out[b.name] = {"reason": reason, "device": device, "device_free": free}
    from .connect import TRIM_ENV, versions
    return {**whoami(), "backends": out, "versions": versions(), "cpus": cpus(),
            "malloc_trim_threshold": os.environ.get(TRIM_ENV)}


def rebuild(spec: dict):
    """A generated dataset rebuilt from its name by the workload's own plan, checked against the
    client's sha256 (same name, same parameters, same generator version)."""
    from ..registry import select
    from ..workload import get
    wl = get(spec["workload"])
    key = (wl.name, spec["name"], repr(sorted(spec["args"].items())))
    if key not in _PLAN:
        _PLAN.clear()                              # one plan at a time: it may hold a database
        opts = replace(run_options(spec["args"], wl), datasets=(spec["name"],))
        _PLAN[key] = wl.plan(opts, select(list(opts.backends), wl.name))[0]
    for ds in _PLAN[key]:
        if ds.sha256 == spec["sha256"]:
            return ds
    raise RuntimeError(f"dataset '{spec['name']}' rebuilt on {socket.gethostname()} does not "
                       f"match the client's (sha256 {spec['sha256'][:16]}...): different "
                       "hmmbench versions?")


class Part(list):
    """A worker's shards of a dataset: per piece, a list of its shards; and, found once, their
    bytes (``held``) and per backend, chunking mode and shard the memory estimate
    (``checked``)."""

    def __init__(self, pieces=()):
        super().__init__(pieces)
        self.checked: dict = {}
        self.held: Optional[int] = None


def memory_refusal(part: Part, piece: int, shard: int, b, mode: str,
                   limit: Optional[int]) -> Optional[str]:
    """Why one of this worker's shards would not fit in the worker's memory limit (Dask's,
    ``limit`` bytes, sent by the client; None or 0: none), else None: the worker's shards, all
    held at once, and the backend's need on the shard's largest launch in ``mode``
    (:func:`hmmbench.runner.memory.cell_need`). Found once per backend, mode and shard."""
    if not limit:
        return None
    from ..workload import get
    wl = get(b.workload)
    key = (b.workload, b.name, mode, piece, shard)
    if key not in part.checked:
        from ..runner.memory import cell_need
        shape = wl.loaded_shape(part[piece][shard])
        part.checked[key] = _held(wl, part) - shape.held + cell_need(b, shape, mode)[0]
    others = [p for p in resident(part) if p is not part]
    host = part.checked[key] + sum(_held(wl, p) for p in others)
    if host <= limit:
        return None
    from ..memory import fmt_bytes
    beside = (f", and its shards of {len(others)} other placement"
              f"{'s' if len(others) > 1 else ''} of a dataset" if others else "")
    return (f"its shard of piece {piece} needs about {fmt_bytes(host)} of memory (estimate: "
            f"this worker's shards and {b.name}'s call{beside}), more than the limit, the "
            f"worker's memory limit, {fmt_bytes(limit)}: ask for more workers, fewer pairs or "
            "another backend, or give the workers more memory")


def _held(wl, part: Part) -> int:
    if part.held is None:
        part.held = sum(wl.loaded_shape(u, detailed=False).held for shards in part
                        for u in shards)
    return part.held


def _worker_address() -> Optional[str]:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):              # not in a Dask task: a test's own call
        return None


def _hold(part: Part) -> Part:
    """Counts ``part`` among this worker's Parts (:func:`resident`) while it lives."""
    key = (_worker_address(), id(part))
    part.resident_key = key
    _RESIDENT[key] = weakref.ref(part, lambda _, key=key: _RESIDENT.pop(key, None))
    return part


def resident(part: Part) -> list:
    """The Parts the worker holding ``part`` holds now, ``part`` among them."""
    worker = getattr(part, "resident_key", (None,))[0]
    held = [ref() for (w, _), ref in list(_RESIDENT.items()) if w == worker]
    return [p for p in held if p is not None]


def load_part(spec: dict, index: int, n_workers: int, per_worker: int, env: dict,
              memory_limit: Optional[int] = None) -> Part:
    """This worker's shards of every piece of a dataset: per piece, a list of ``per_worker``
    consecutive shards (of n_workers x per_worker). Received from the client (``spec["units"]``,
    files read there once) or rebuilt here (generated sets; a lazy set's piece here is n_workers
    of its own pieces joined). A set rebuilt whole is generated here whole, then cut: past
    ``memory_limit`` (the worker's) that is refused first, a UserError naming the estimate and
    the limit."""
    from ..workload import get
    from .shards import joined, shard_bounds
    _apply(env)
    if "units" in spec:
        return _hold(Part(spec["units"]))
    wl = get(spec["workload"])
    ds = rebuild(spec)
    if memory_limit and not ds.lazy:
        _check_rebuild(wl, ds, memory_limit)
    # a lazy set's pieces n_workers at a time: each worker's share of a sharded call is then as
    # large as one process's call, whose fixed costs (pipeline fill, result round trip) would
    # otherwise be paid n_workers times as often per pair
    pieces = joined(ds.chunks(), n_workers) if ds.lazy else [ds.load()]
    mine = slice(index * per_worker, (index + 1) * per_worker)
    part = [[wl.shard(unit, a, b) for a, b in shard_bounds(wl, unit, n_workers * per_worker)[mine]]
            for unit in pieces]
    ds._cache = None                               # keep the shards, not the whole set
    return _hold(Part(part))


def _check_rebuild(wl, ds, limit: int) -> None:
    """The set generated whole and its shards beside it (as many bytes again), or what making
    it holds, against the worker's memory limit."""
    from ..errors import UserError
    from ..memory import fmt_bytes
    shape = wl.unit_shape(ds)
    if shape is None:
        return
    need = max(shape.making_bytes, 2 * shape.held)
    if need > limit:
        me = whoami()
        raise UserError(f"worker {me['name']}@{me['host']}: dataset '{ds.name}' needs about "
                        f"{fmt_bytes(need)} of memory to be generated and cut into shards here "
                        f"(estimate), more than the limit, the worker's memory limit, "
                        f"{fmt_bytes(limit)}: ask for fewer pairs, or give the workers more "
                        "memory")


def describe(part: list) -> list:
    """Per piece, per shard of this worker: (items, cells, has expected values)."""
    return [[(int(u.n_items), int(u.cells), u.expected is not None) for u in shards]
            for shards in part]


def refusal(part: list, piece: int, sent, env: dict) -> Optional[str]:
    """Why the backend refuses one of this worker's shards of a piece (None: it does not)."""
    _apply(env)
    b = backend(sent)
    return next((r for r in (b.refuse_reason(u) for u in part[piece] if u.n_items) if r), None)


def subset(part: list, piece: int, shard: int, idx: np.ndarray):
    """Items ``idx`` (shard-local) of one of this worker's shards of a piece (sampled checks)."""
    return part[piece][shard].subset(idx)


@releases_device
def run_piece(part: list, piece: int, shard: int, sent, mode: str, launches_fn,
              env: dict, keep: Optional[tuple] = None,
              memory_limit: Optional[int] = None) -> dict:
    """One of this worker's shards of a piece through the backend, as the single-process runner
    runs a chunk: the launches of the chunking mode, their stage times summed, results as an
    array -- or, with ``keep`` = (key, token), kept here for :func:`take_values` and left out
    of what the task returns. ``t_start``/``t_end``: this host's clock (the call's timeline).
    Refused, before the backend is called, when the shard would not fit in ``memory_limit``
    (the worker's, :func:`memory_refusal`)."""
    from ..runner.cell import add_stages, joined_values, run_launches
    from ..workload import get
    t_start = time.time()
    started = time.perf_counter()
    _apply(env)
    unit = part[piece][shard]
    me = whoami()
    timing: dict = {}
    infos: list = []
    if unit.n_items == 0:
        log10 = np.zeros(0)
        out = {**me, "timing": timing, "wall": 0.0, "n_fallback": 0, "infos": infos,
               "launches": 0}
    else:
        b = backend(sent)
        refusal = b.refuse_reason(unit) or (memory_refusal(part, piece, shard, b, mode,
                                                           memory_limit)
                                            if isinstance(part, Part) else None)
        if refusal:
            return {**me, "refused": refusal}
        launches = list((launches_fn or get(b.workload).launches)(unit, mode))
        outs, wall = run_launches(b, launches)
        n_fallback = add_stages(timing, outs, infos)
        log10 = joined_values(outs)
        out = {**me, "timing": timing, "wall": wall, "n_fallback": n_fallback, "infos": infos,
               "launches": len(launches), "device": device_name(b)}
    if keep is None:
        out["log10"] = log10
    else:
        key, token = keep
        _KEPT[key] = (token, log10)
        out["n_kept"] = len(log10)
    # the task's whole time here: its wall beyond the launches' is this function's own work
    return {**out, "task": time.perf_counter() - started, "t_start": t_start,
            "t_end": time.time()}


def take_values(part: list, piece: int, shard: int, sent, mode: str, launches_fn, env: dict,
                key: tuple, token: str) -> dict:
    """The results a call kept here (:func:`run_piece` with ``keep``), handed over once. Where
    they are gone (this worker is not the one that ran the call: it died meanwhile) the shard is
    run again here, and the answer says so."""
    kept = _KEPT.get(key)
    if kept is not None and kept[0] == token:
        del _KEPT[key]
        return {**whoami(), "log10": kept[1], "rerun": False}
    out = run_piece(part, piece, shard, sent, mode, launches_fn, env)
    return {**out, "rerun": True}


def drop_kept() -> int:
    """Forget every kept result (the client released its dataset); how many there were."""
    n = len(_KEPT)
    _KEPT.clear()
    return n


@releases_device
def fleet_run(args: dict, workload: str, cfg, backends: list, env: dict,
              memory_limit: Optional[int] = None) -> dict:
    """Fleet mode: the whole benchmark matrix on this worker, as ``hmmbench run`` would run it
    here (``cfg`` and ``backends``: the client's); the records come back as plain dicts. Its
    memory checked first, as ``hmmbench run`` checks it, against ``memory_limit`` (the
    worker's, sent by the client; None: the memory available here): past it, a UserError
    naming the worker, the estimate and the limit."""
    from ..errors import UserError
    from ..hostinfo import enrich_devices, host_info
    from ..memory import MemoryLimit, fmt_bytes
    from ..runner import run_benchmark
    from ..runner.benchmark import plan_cells
    from ..runner.memory import check_memory
    from ..workload import get
    _apply(env)
    wl = get(workload)
    # the sent instances themselves, not the shard mode's kept ones: run_benchmark closes them
    datasets, plan = wl.plan(run_options(args, wl), backends)
    limit = (MemoryLimit(memory_limit, f"the worker's memory limit, {fmt_bytes(memory_limit)}")
             if memory_limit else MemoryLimit.of(None))
    try:
        check_memory(plan_cells(datasets, backends, cfg, plan.get("backends_for")), cfg, limit)
    except UserError as exc:
        me = whoami()
        raise UserError(f"worker {me['name']}@{me['host']}: {exc}") from None
    t0 = time.perf_counter()
    bench = run_benchmark(datasets, backends, cfg, **plan)
    enrich_devices(bench.devices, wl.name)
    return {**whoami(), "records": [r.to_dict() for r in bench.records],
            "devices": bench.devices, "chunking": bench.chunking, "config": bench.config,
            "host_info": host_info(), "seconds": time.perf_counter() - t0}
