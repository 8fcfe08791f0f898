"""Shard mode's memory check before anything is generated or placed: every worker's shards of a
set generated piece by piece, found from the set's plan of lengths
(:meth:`hmmbench.workload.Workload.planned_units`) exactly as the worker will cut them
(:func:`.worker.load_part`: ``n`` pieces joined into a unit, each unit cut into ``n`` x
``--shards-per-worker`` shards of about equal cost), against the worker's memory limit (Dask's,
:func:`.connect.worker_memory_limits`; a worker without one is not checked). A worker keeps its
shards of every unit, so it needs the most of what making them holds (its shards made so far,
then a unit at its making peak) and of its shards beside a backend's call on the largest shard
in the cell's chunking mode; a worker in the sets of several backends holds its shards of
each set at once. Past the limit, at any of the run's worker counts: one line naming
the dataset, backend, worker, its shards, the estimate and the limit.

Once placed, each call is checked again on its worker, against the shards it holds
(:func:`.worker.memory_refusal`). The client's own part, the cross-check's reference, is
checked against the client's limit (:func:`check_client`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import UserError
from ..memory import MemoryLimit, fmt_bytes
from .shards import balance


@dataclass
class WorkerShards:
    """One worker's shards of every unit of a planned set: their bytes (``held``), the most
    held while they are made, and the shape of the largest shard of any worker (``largest``:
    budgeting every worker's call on it keeps the wavefront groups to one walk)."""
    index: int
    units: int
    held: int
    making: int
    largest: object

    def need(self, backend, mode: str, call_need: Optional[tuple] = None) -> tuple:
        """(bytes, what they are for) on ``backend`` in chunking ``mode`` (``call_need``: the
        call's (host, device) need on the largest shard, where the caller has it)."""
        from ..runner.memory import cell_need
        host = (call_need or cell_need(backend, self.largest, mode))[0]
        call = self.held + host - self.largest.held
        if self.making >= call:
            return self.making, "making its shards of each unit"
        return call, f"its shards beside {backend.name}'s call on the largest"


def plan_shards(workload, ds, n_workers: int, per_worker: int) -> Optional[list]:
    """Per worker, :class:`WorkerShards` of a lazy set over ``n_workers`` workers; None where
    the workload cannot plan the set."""
    planned = workload.planned_units(ds, n_workers)
    if planned is None:
        return None
    n_shards = n_workers * per_worker
    runs = [[] for _ in range(n_workers)]        # per worker: (unit, start, stop) of its shards
    for u in range(len(planned.units)):
        for s, (a, b) in enumerate(balance(planned.costs(u), n_shards)):
            runs[s // per_worker].append((u, a, b))
    last = len(planned.units) - 1
    largest = planned.shape([r for mine in runs for r in mine], groups=True)
    out = []
    for i, mine in enumerate(runs):
        sizes = [(u, planned.shape([(u, a, b)]).nbytes) for u, a, b in mine]
        held = sum(size for _, size in sizes)
        # the largest prefix of its shards held while a unit is made: all but the last unit's
        before_last = held - sum(size for u, size in sizes if u == last)
        out.append(WorkerShards(i, len(planned.units), held,
                                before_last + planned.making_bytes, largest))
    return out


def check_shards(session, counts: list, backends: list, datasets: list, cfg,
                 pick: Optional[Callable] = None, limit: Optional[MemoryLimit] = None) -> None:
    """Raises UserError (one line) for the first worker whose shards of a lazy set, at one of
    the worker ``counts``, would not fit in its memory limit; nothing generated or sent.

    A dataset's shards are placed once per worker set and kept until the next dataset
    (:meth:`.sharded.Session.place`): the active workers' first (the runner sizes the pieces
    on them), then each backend's set as its first cell comes. A worker in several sets holds
    its shards of each at once, so a cell is budgeted on its worker's shards of every set
    placed so far beside the call. A GPU backend's device need, its call on the largest shard
    (the shards stay in host memory), is checked against the worker's device: its free memory
    when probed (``device_free``) or ``limit.device`` (--device-memory-limit), the less."""
    from ..runner.benchmark import plan_cells
    from ..runner.memory import cell_need
    k = session.per_worker
    planned: dict = {}
    for n in counts:
        placed: dict = {}                 # per dataset: the worker sets holding its shards
        for cell in plan_cells(datasets, backends, cfg, pick):
            ds = cell.dataset
            workers = tuple(session.workers_for(cell.backend.name, n))
            if not ds.lazy or len(workers) < n:   # too few workers: its cell says why
                continue
            sets = placed.setdefault(id(ds), [tuple(session.capable[:n])])
            if workers not in sets:
                sets.append(workers)
            device_limits = [_device_limit(session, w, cell.backend.name, limit)
                             for w in workers]
            if not any(session.memory_limits.get(w) for w in workers) and \
                    not any(device_limits):
                continue
            key = (id(ds), n)
            if key not in planned:
                planned[key] = plan_shards(session.workload, ds, n, k)
            if planned[key] is None:
                continue
            # every worker's call is budgeted on the same largest shard: its need once
            call_need = cell_need(cell.backend, planned[key][0].largest, cell.mode)
            device = call_need[1]
            for shards, w, on_device in zip(planned[key], workers, device_limits):
                if on_device is not None and device > on_device.bytes:
                    raise UserError(
                        f"dataset '{ds.name}' on backend '{cell.backend.name}' over {n} "
                        f"workers: worker {session.label(w)}'s call on the largest shard needs "
                        f"about {fmt_bytes(device)} of device memory (estimate from the set's "
                        f"plan), more than the limit, {on_device.why}: ask for more workers, "
                        "fewer pairs or smaller launches (--chunking merged:N)")
                host_limit = session.memory_limits.get(w)
                need, what = shards.need(cell.backend, cell.mode, call_need)
                others = [other for other in sets if other != workers and w in other]
                if others:
                    need += sum(planned[key][other.index(w)].held for other in others)
                    what += (f", beside its shards of the same set on {len(others)} other "
                             f"worker set{'s' if len(others) > 1 else ''}")
                if host_limit and need > host_limit:
                    raise UserError(_refusal(session.label(w), ds.name, cell.backend.name, n,
                                             k, shards, need, what, host_limit))


def _device_limit(session, w: str, backend: str, limit) -> Optional[MemoryLimit]:
    """A worker's device limit for a backend: what its probe found free, or
    --device-memory-limit, the less (None: neither known)."""
    free = session.probes.get(w, {}).get("backends", {}).get(backend, {}).get("device_free")
    if limit is None:
        limit = MemoryLimit(None, "")
    return limit.on_device(free, f" on worker {session.label(w)}")


def _refusal(worker: str, dataset: str, backend: str, n: int, k: int, shards: WorkerShards,
             need: int, what: str, limit: int) -> str:
    first = shards.index * k
    which = f"shard {first + 1}" if k == 1 else f"shards {first + 1}-{first + k}"
    return (f"dataset '{dataset}' on backend '{backend}' over {n} workers: worker {worker} "
            f"({which} of {n * k} of each of {shards.units} units) needs about "
            f"{fmt_bytes(need)} of memory (estimate from the set's plan: {what}), more than "
            f"the limit, the worker's memory limit, {fmt_bytes(limit)}: ask for more workers, "
            "fewer pairs or another backend, or give the workers more memory")


def check_client(session, counts: list, datasets: list, cfg, limit) -> None:
    """The cross-check runs here, on the client: its reference on a set that fits in memory
    (loaded here too) as a single-process run budgets it, and on a lazy set's check sample,
    fetched from the workers (``--sample-pairs`` items of each of the n pieces a sharded call
    joins), alone -- no piece is held here. Against ``limit`` (a MemoryLimit: --memory-limit,
    else the memory available here); past it, the one-line refusal naming the reference."""
    from ..registry import select
    from ..runner.benchmark import plan_cells
    from ..runner.memory import check_host_device, reference_need, sample_need
    try:
        reference = select([cfg.reference], cfg.workload)[0]
    except Exception:  # noqa: BLE001 - no reference: no cross-check to budget for
        return
    wl = session.workload
    seen: set = set()
    for cell in plan_cells(datasets, [reference], cfg):
        ds = cell.dataset
        if ds.lazy:
            for n in counts:
                if (id(ds), n) in seen:
                    continue
                seen.add((id(ds), n))
                samples = wl.sample_shapes(ds, cell.mode, cfg.sample_pairs, join=n)
                if samples is None:
                    planned = wl.planned_units(ds, n)
                    if planned is None:
                        continue
                    unit = planned.shape([(u, 0, len(planned.costs(u)))
                                          for u in range(len(planned.units))], groups=True)
                    samples = [wl.sample_shape(unit, cfg.sample_pairs * n)]
                if samples[0] is not None:
                    check_host_device(ds.name, reference, sample_need(reference, samples),
                                      limit)
        elif (id(ds), cell.mode) not in seen:
            seen.add((id(ds), cell.mode))
            try:
                shape = wl.unit_shape(ds, cell.mode)
            except UserError:
                raise                                   # bad input: refused before any cell
            except Exception:  # noqa: BLE001 - a set that fails to load fails at its own turn
                shape = None
            if shape is not None:
                check_host_device(ds.name, reference,
                                  reference_need(wl, ds, reference, shape, cfg, cell.mode),
                                  limit)
