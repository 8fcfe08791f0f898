"""The memory check of a run, before anything is allocated: for every cell of the matrix, the
dataset's own bytes plus what its backend's call needs (:meth:`Backend.memory_need`, on the
largest launch of the cell's chunking mode; ``--in-flight`` calls at once on a GPU API), and
the cross-check's reference on the whole set, against the host's limit; a GPU backend's
device need against the device's free memory. A cell past its limit refuses the whole run with
one line (:func:`hmmbench.memory.refusal`) -- better than a kernel's out-of-memory kill, which
ends the process with no message and loses the run."""
from __future__ import annotations

from ..errors import UserError
from ..memory import MemoryLimit, fmt_bytes, refusal
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
        if id(ds) not in shapes:
            try:
                shape = workload.unit_shape(ds)
            except UserError:
                raise                                   # bad input: refused before any cell
            except Exception:  # noqa: BLE001 - a set that fails to load fails at its own turn,
                shape = None   # after the cells before it are run and kept, as without this check
            shapes[id(ds)] = shape
            if shape is not None and reference is not None:
                _check(ds.name, reference, shape, shape.nbytes, 1, limit)
        shape = shapes[id(ds)]
        if shape is None:
            continue
        launch = shape.launch(c.mode) if hasattr(shape, "launch") else shape
        at_once = cfg.in_flight if c.backend.api != "numpy" else 1
        _check(ds.name, c.backend, launch, shape.nbytes, at_once, limit)


def _check(dataset: str, backend, shape, held: int, at_once: int, limit: MemoryLimit) -> None:
    need = backend.memory_need(shape)
    host = held + at_once * need.host
    if limit.bytes is not None and host > limit.bytes:
        raise refusal(dataset, backend.name, host, limit)
    if need.device:
        try:
            free = backend.device_memory_free()
        except Exception:  # noqa: BLE001 - no device to ask: the cell says so when it runs
            free = None
        if free is not None and at_once * need.device > free:
            raise refusal(dataset, backend.name, at_once * need.device,
                          MemoryLimit(free, f"the device's free memory, {fmt_bytes(free)}"),
                          "device memory")
