"""The memory check of a run, before anything is allocated: for every cell of the matrix, what
the runner holds for the cell's largest unit (the dataset's own bytes; a set generated piece by
piece: its largest unit, pieces and all) plus what its backend's call needs
(:meth:`Backend.memory_need`, on the largest launch of the cell's chunking mode; ``--in-flight``
calls at once on a GPU API), and the cross-check's reference on what it computes beside that
unit (the unit, or the sample it draws from it), against the host's limit; a GPU backend's
device need against the device's free memory. A cell past its limit refuses the whole run
with one line (:func:`hmmbench.memory.refusal`) -- better than a kernel's out-of-memory kill,
which ends the process with no message and loses the run."""
from __future__ import annotations

from ..errors import UserError
from ..memory import MemoryLimit, refusal
from ..registry import select
from .config import RunConfig


def check_memory(cells: list, cfg: RunConfig, limit: MemoryLimit) -> None:
    """Raises UserError (one line) for the first cell whose estimate is past its limit."""
    from ..workload import get
    workload = get(cfg.workload)
    shapes: dict = {}
    try:
        reference = select([cfg.reference], cfg.workload)[0]
    except Exception:  # noqa: BLE001 - no reference: no cross-check to budget for
        reference = None
    for c in cells:
        ds = c.dataset
        key = (id(ds), c.mode)
        if key not in shapes:
            try:
                shape = workload.unit_shape(ds, c.mode)
            except UserError:
                raise                                   # bad input: refused before any cell
            except Exception:  # noqa: BLE001 - a set that fails to load fails at its own turn,
                shape = None   # after the cells before it are run and kept, as without this check
            shapes[key] = shape
            fresh = True
        else:
            shape, fresh = shapes[key], False
        if shape is not None:
            check_need(ds.name, c.backend, shape, c.mode,
                       cfg.in_flight if c.backend.api != "numpy" else 1, limit)
        if fresh and shape is not None and reference is not None:
            check_host_device(ds.name, reference,
                              reference_need(workload, ds, reference, shape, cfg, c.mode), limit)


def cell_need(backend, shape, mode: str, at_once: int = 1) -> tuple:
    """(host bytes, device bytes) a cell needs: what is held for the unit of ``shape`` beside
    ``at_once`` calls on its largest launch in chunking ``mode``, or what making the unit
    holds, whichever is more; the calls' device need."""
    launch = shape.launch(mode) if hasattr(shape, "launch") else shape
    need = backend.memory_need(launch)
    return (max(shape.making_bytes, shape.held + at_once * need.host),
            at_once * need.device)


def reference_need(workload, ds, reference, shape, cfg: RunConfig, mode: str = "merged") -> tuple:
    """(host bytes, device bytes) the cross-check's reference needs on a unit of ``shape``:
    the whole unit in one call where the check covers every item (:func:`.check.check_plan`);
    where it samples, the sample it draws from each unit of chunking ``mode`` (``sample_pairs``
    items of each piece the unit joins) -- made and computed while the unit is held -- which is
    all it computes: each unit's sample as drawn where the workload knows the set's lengths
    (:meth:`Workload.sample_shapes`), else one shaped from the unit's
    (:meth:`Workload.sample_shape`); a workload that can do neither is budgeted on the whole
    unit."""
    from .check import check_plan
    if ds.n_cells is not None and ds.n_pairs is not None:
        full, per_piece = check_plan(ds, ds.n_cells, ds.n_pairs, cfg)
        if not full:
            samples = workload.sample_shapes(ds, mode, per_piece) or [
                workload.sample_shape(shape, per_piece * getattr(shape, "pieces", 1))]
            if samples[0] is not None:
                return sample_need(reference, samples, shape.held, shape.making_bytes)
    return cell_need(reference, shape, "merged")


def sample_need(reference, samples: list, held: int = 0, making: int = 0) -> tuple:
    """(host bytes, device bytes) of the reference on the largest of ``samples`` beside
    ``held`` bytes, or ``making`` when that is more."""
    needs = [cell_need(reference, s, "merged") for s in samples]
    host, device = max(n[0] for n in needs), max(n[1] for n in needs)
    return max(making, held + host), device


def check_need(dataset: str, backend, shape, mode: str, at_once: int,
               limit: MemoryLimit) -> None:
    """Raises the one-line refusal when the cell's host need is past ``limit`` or its device
    need past the device's free memory."""
    check_host_device(dataset, backend, cell_need(backend, shape, mode, at_once), limit)


def check_host_device(dataset: str, backend, need: tuple, limit: MemoryLimit) -> None:
    """:func:`check_need` on a (host bytes, device bytes) need."""
    host, device = need
    if limit.bytes is not None and host > limit.bytes:
        raise refusal(dataset, backend.name, host, limit)
    if device:
        try:
            free = backend.device_memory_free()
        except Exception:  # noqa: BLE001 - no device to ask: the cell says so when it runs
            free = None
        on_device = limit.on_device(free)
        if on_device is not None and device > on_device.bytes:
            raise refusal(dataset, backend.name, device, on_device, "device memory")
