"""A sequence database kept on a device across the cells of a run.

A search pays the database once: the first cell of a database lays it out (the length-sorted
launch order, the length classes; computed while the residues are copied) and uploads residues,
offsets and that layout; every further model and kind of the
run reuses the device copy. The one-off cost is the ``db load`` (``prep`` = layout and staging,
``h2d`` = the copies), reported once in the info of the run that paid it
(``info["db_load_s"]``) and kept out of the cell's own stages, so one run gives both "first
search" (db load + cell total) and "each further search" (cell total) figures.

Cells run database-major, so each backend keeps one database (a Swiss-Prot-sized one is about
0.2 GB on the device). A job without a database key (a sampled subset, ``hmmbench score``) is
loaded for that run alone and its load counts in the run's own stages.
"""
from __future__ import annotations

import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .host import launch_order
from ..model import SequenceSet
from ..pipeline import length_classes   # here, not in the layout thread: a first import there
#                                        holds the GIL the load's copies wait for


@dataclass
class ResidentDatabase:
    """One database on one device: host-side lengths and launch order, device handles."""
    key: Optional[str]
    seqs: SequenceSet
    order: Optional[np.ndarray]           # int32 length-sorted launch order of every sequence
    #                                       (None while only its device copy exists)
    lengths: np.ndarray                   # the distinct lengths (the pipeline's table rows)
    classes: np.ndarray                   # int32 distinct-length index of each sequence
    buffers: dict                         # "residues", "offsets", "order", "classes" and the
    #                                       backend's derived per-sequence arrays: device
    load_s: dict = field(default_factory=dict)    # {"prep": s, "h2d": s} of the one-off load
    fetch_order: Optional[Callable] = None         # () -> the host copy of a device order
    load_bytes: int = 0                            # host bytes the one-off load uploaded

    @property
    def n(self) -> int:
        return len(self.seqs)

    def host_order(self) -> np.ndarray:
        """The launch order on the host (downloaded once where the device computed it)."""
        if self.order is None:
            self.order = self.fetch_order()
        return self.order

    def is_whole_order(self, idx) -> bool:
        """Whether ``idx`` is the resident launch order itself (its device copy is used)."""
        return isinstance(idx, np.ndarray) and idx is self.host_order()


class ResidentCache:
    """A backend's resident database. ``upload(arrays, later)`` puts named host arrays on the
    device (residues and offsets, then the dict ``later()`` returns: launch order, length
    classes and what ``derive`` adds) and returns (buffers, {"prep": s, "h2d": s}), and may
    return a third item: a function releasing what the host keeps for the database's life
    (page-locked memory), called when the database is dropped;
    ``derive(lengths, classes)``, when given, adds per-sequence arrays the backend wants
    resident too, computed from the distinct lengths and each sequence's class. The layout
    (launch order, classes, derived arrays) is computed in a thread while the residues are
    copied: the load's "prep" is the time the copies waited for it, "h2d" the rest of the
    load's wall time. ``device_order``, when given, computes the launch order on the device
    from the uploaded classes: ``device_order(buffers, n, n_classes)`` sets ``buffers["order"]``
    and returns a function that downloads it (called if the host ever needs the order), for
    databases of at most ``device_order.max_classes`` distinct lengths; ``prepare()`` builds its
    kernels before the load's clocks start. The host then sorts nothing, and the device's time
    counts in the load's "prep" (it is layout). ``loads`` counts how often it ran (the tests
    count uploads)."""

    def __init__(self, upload: Callable, derive: Optional[Callable] = None, device_order=None):
        self._upload, self._derive, self._device_order = upload, derive, device_order
        self.current: Optional[ResidentDatabase] = None
        self.loads = 0

    def get(self, job) -> tuple:
        """(ResidentDatabase of the job's sequences, the load's seconds or None when it was
        already resident)."""
        return self.get_seqs(job.seqs, getattr(job, "database", None))

    def on_device(self, n_classes: int) -> bool:
        """Whether the launch order of a database with ``n_classes`` lengths is sorted there."""
        return self._device_order is not None and n_classes <= self._device_order.max_classes

    def _layout(self, seqs: SequenceSet) -> tuple:
        lengths, classes = length_classes(seqs.lengths)
        order = None if self.on_device(len(lengths)) else launch_order(seqs)
        arrays = {"classes": classes} if order is None else {"order": order, "classes": classes}
        if self._derive is not None:
            arrays.update(self._derive(lengths, classes))
        return order, lengths, classes, arrays

    def get_seqs(self, seqs: SequenceSet, key) -> tuple:
        """The same for a sequence set under ``key`` (None: not kept)."""
        cur = self.current
        if key is not None and cur is not None and cur.key == key and cur.seqs is seqs:
            return cur, None
        self.current = None                   # free the previous database first
        if self._device_order is not None:
            self._device_order.prepare()
        waited = []
        with ThreadPoolExecutor(1, "hmmbench-layout") as pool:
            layout = pool.submit(self._layout, seqs)

            def later() -> dict:
                t0 = time.perf_counter()
                arrays = layout.result()[3]
                waited.append(time.perf_counter() - t0)
                return arrays
            buffers, seconds, *release = self._upload({"residues": seqs.residues,
                                                       "offsets": seqs.offsets}, later)
            order, lengths, classes, layout_arrays = layout.result()
        nbytes = seqs.residues.nbytes + seqs.offsets.nbytes + sum(
            a.nbytes for a in layout_arrays.values())
        sorting, fetch = 0.0, None
        if order is None:
            t0 = time.perf_counter()
            try:
                fetch = self._device_order(buffers, len(seqs), len(lengths))
            except BaseException:
                for fn in release:            # no database to unlock it when dropped
                    fn()
                raise
            sorting = time.perf_counter() - t0
        self.loads += 1
        wait = sum(waited)
        load = {"prep": wait + sorting + seconds.get("prep", 0.0),
                "h2d": max(0.0, seconds.get("h2d", 0.0) - wait)}
        db = ResidentDatabase(key, seqs, order, lengths, classes, buffers, load, fetch, nbytes)
        for fn in release:                    # when the database is dropped, not at exit (the
            weakref.finalize(db, fn).atexit = False     # process's end unlocks everything)
        if key is not None:
            self.current = db
        return db, load

    def clear(self) -> None:
        self.current = None


def each_array(arrays: dict, later: Optional[Callable] = None):
    """(name, array) of an upload: ``arrays``, then those ``later()`` returns."""
    yield from arrays.items()
    if later is not None:
        yield from later().items()


def load_info(job, load: Optional[dict], timing: dict, nbytes: int = 0) -> dict:
    """Where a load's seconds go: a resident database's into ``info["db_load_s"]`` (with the
    bytes it uploaded, ``info["db_load_bytes"]``), a one-off set's into the run's own stages
    (``timing`` is updated)."""
    if load is None:
        return {}
    if getattr(job, "database", None) is None:
        for stage, s in load.items():
            timing[stage] = timing.get(stage, 0.0) + s
        return {}
    return {"db_load_s": dict(load), **({"db_load_bytes": int(nbytes)} if nbytes else {})}
