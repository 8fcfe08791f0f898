"""Shard mode on the client: every dataset's pieces cut into one shard per worker (or K of them,
``--shards-per-worker``) and kept resident there, every backend run on all shards at once (on
the first N workers that can run it), the results gathered in dataset order.

The ordinary runner (:func:`hmmbench.runner.run_benchmark`) drives everything -- warm-up and
cross-check, timed repeats, stopping, records -- over stand-ins:

* :class:`ClusterDataset` wraps a dataset. Its pieces (the runner's chunks) are
  :class:`ShardProxy` objects that hold no data: the data lives on the workers, loaded once per
  dataset (:class:`.placement.Placement`): generated sets are rebuilt there from their name (the sha256 is
  checked against the client's), files are read here once and each worker is sent its shard as
  packed arrays. Nothing is sent again per repeat; results come back as arrays.
* :class:`ShardedBackend` wraps a backend: one call runs one piece on every worker (each runs
  the piece's launches in the chunking mode, as a single process would) and joins the results.
  Its ``total`` is the wall time of the whole sharded call (submit, compute, and either each
  worker's answer -- its results kept in its memory, ``--gather cell`` -- or its results
  themselves, ``--gather call``; the next piece is submitted before a piece's answers are
  collected, so they overlap compute); its stage times are the slowest worker's, so kernel GCUPS
  is the aggregate rate of the critical path.
* Results kept on the workers (:class:`.placement.WorkerValues`) travel to the client only when the runner
  reads them (the cross-check pass), once per cell and straight from each worker: the timed
  calls do not funnel every worker's results through this process while the next call waits.
* Every call's timeline per worker (submit, task start and end on the worker's clock, corrected
  by its measured offset, stage times, answer received; the dataset's scatter and the results'
  transfer) goes into the record (:func:`worker_timeline`).
* The cross-check (warm-up pass only) checks exactly what a single-process run checks: a set that
  fits in memory is loaded here as well (files are read here anyway); the samples of a lazy set
  (generated piece by piece, too large for memory) are fetched from the workers' shards.

Faults: shards are Dask futures with lineage, so a killed worker's shards are rebuilt (or re-sent
by the scheduler, which holds the task) on a live worker and its running pieces re-run there;
each such move is recorded (:attr:`Session.retried`).
"""
from __future__ import annotations

import socket
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..backend import Backend, Execution
from ..runner.reference import ReferenceStore
from . import worker as remote
from .connect import worker_memory_limits
from .placement import Placement, needs_scheduler


class Session:
    """The client, the workers a sharded run uses, what each can run, and what happened."""

    def __init__(self, client, workload, args: dict, launches_fn=None, per_worker: int = 1,
                 gather: str = "cell"):
        self.client, self.workload, self.args = client, workload, args
        #: "cell": results kept on the workers until read; "call": sent back with every call
        self.gather = gather
        #: shards per worker and piece: more than one overlaps a shard's result transfer with
        #: the next shard's compute
        self.per_worker = per_worker
        self.launches_fn = launches_fn
        self.env = remote.passed_env()
        self.probes: dict = {}            # worker address -> probe result
        self.memory_limits: dict = {}     # worker address -> its Dask memory limit (None: none)
        self.capable: list = []           # workers that can run at least one backend, in order
        self.excluded: dict = {}          # worker address -> why it gets no shards
        self.active: list = []            # the workers of the current worker count
        self.n = 0                        # the current worker count
        self.stats: dict = {}             # (sha256, chunking, backend) -> passes of per-shard stats
        self.retried: list = []           # shards that ran elsewhere than planned
        self.timeline: dict = {}          # (sha256, chunking, backend) -> passes of call rows
        self.transfers: dict = {}         # (sha256, chunking, backend) -> kept results' reads
        self.scatter: dict = {}           # sha256 -> worker index -> seconds to place its shard
        self.clock: dict = {}             # worker address -> (offset, uncertainty) seconds
        self.placements: dict = {}        # the current dataset's placements by worker set
        self.current: Optional["Placement"] = None   # the placement made last

    def probe(self, workers: list, backends: list) -> None:
        """Ask every worker which backends it can run; keep those that can run one (in the
        order given)."""
        futures = [self.client.submit(remote.probe, backends, self.env,
                                      workers=[w], allow_other_workers=False, pure=False)
                   for w in workers]
        for w, res in zip(workers, self.client.gather(futures)):
            self.probes[w] = res
        self.memory_limits.update(worker_memory_limits(self.client))
        self.measure_clocks(workers)
        for w in workers:
            reasons = [p["reason"] for p in self.probes[w]["backends"].values()]
            if any(r is None for r in reasons):
                self.capable.append(w)
            else:
                self.excluded[w] = "; ".join(dict.fromkeys(reasons))

    def measure_clocks(self, workers: list) -> None:
        """Each worker's clock against this one's (a host's clock may be off by more than a
        call): its time.time() minus the midpoint of the round trip that asked for it, the
        offset known to half that round trip. A worker on this host reads this host's clock:
        its offset is 0 (an estimate from a loaded round trip would be off by milliseconds)."""
        here = socket.gethostname()
        for w in workers:
            if w in self.probes and self.probes[w].get("host") == here:
                self.clock[w] = (0.0, 0.0)
                continue
            t0 = time.time()
            theirs = self.client.run(time.time, workers=[w])[w]
            t1 = time.time()
            self.clock[w] = (theirs - (t0 + t1) / 2, (t1 - t0) / 2)

    def on_client_clock(self, worker: str, t: float) -> float:
        """A time of a worker's clock on this one's (a worker that joined meanwhile, such as
        one that took over a dead worker's shards, is measured now)."""
        if worker not in self.clock:
            try:
                self.measure_clocks([worker])
            except Exception:  # noqa: BLE001 - gone again: its times stay uncorrected
                self.clock[worker] = (0.0, None)
        return t - self.clock[worker][0]

    def restart(self, backends: list, timeout: float) -> None:
        """Fresh worker processes (Dask restarts them through their nannies), probed again: a
        scaling study's row then owes nothing to what the workers ran in the rows before it
        (on four H200, workers that had run the smaller rows ran their share up to 2x slower)."""
        from .connect import wait_for_workers
        n = len(self.probes)
        self.release()
        self.client.restart(timeout=timeout)
        workers = wait_for_workers(self.client, n, timeout)
        self.probes, self.capable, self.excluded = {}, [], {}
        self.probe(workers, backends)

    def use(self, n: int) -> None:
        self.n = n
        self.active = self.capable[:n]

    def workers_for(self, name: str, n: Optional[int] = None) -> list:
        """The first n (default: the current count) workers that can run a backend: the
        others get none of its shards."""
        return [w for w in self.capable if self.probes[w]["backends"][name]["reason"] is None
                ][:self.n if n is None else n]

    def label(self, w: str) -> str:
        p = self.probes[w]
        return f"{p['name']}@{p['host']}"

    @needs_scheduler
    def place(self, ds: "ClusterDataset", workers: tuple) -> "Placement":
        """The dataset's shards on these workers (made on first use); another dataset's are
        released first: datasets run one after another."""
        if any(p.ds is not ds for p in self.placements.values()):
            self.release()
        if workers not in self.placements:
            self.placements[workers] = self.current = Placement(self, ds, list(workers))
        return self.placements[workers]

    def release(self) -> None:
        for p in self.placements.values():
            p.release()
        self.placements = {}


@dataclass
class ShardProxy:
    """One piece of a sharded dataset as the runner sees it: sizes only. The data are on the
    workers; the cross-check gets a set that fits in memory here (:meth:`local`), and a sample
    of a lazy set's piece from the workers (:meth:`subset`)."""
    owner: "ClusterDataset"
    piece: int
    n_items: int
    cells: int
    has_expected: bool = False
    mode: str = ""

    def local(self):
        return self.owner.inner.load()

    @property
    def expected(self):
        return self.local().expected if self.has_expected else None

    def subset(self, idx):
        if not self.owner.inner.lazy:
            return self.local().subset(idx)
        return self.owner.placement().subset(self.piece, np.asarray(idx, dtype=np.int64))

    def with_mode(self, mode: str) -> "ShardProxy":
        return replace(self, mode=mode)


class ClusterDataset:
    """A dataset whose pieces run sharded; every other attribute (name, sha256, runner hints)
    is the wrapped dataset's."""

    #: the runner does not join these pieces: they are joined on the workers (``load_part``)
    pieces_joinable = False

    def __init__(self, inner, session: Session):
        self.inner, self.session = inner, session

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def pieces_per_chunk(self) -> int:
        """A lazy set's pieces per sharded call (joined on the workers, one per worker): the
        check's sample per call grows with it, so every worker count checks as many items."""
        return self.session.n if self.inner.lazy else 1

    def placement(self, workers: Optional[list] = None) -> "Placement":
        """The shards on these workers (default: the session's active ones)."""
        return self.session.place(self, tuple(workers or self.session.active))

    def proxies(self) -> list:
        """The pieces, sized by any placement (every worker set cuts the same pieces)."""
        placed = self.session.placements
        sizes = (next(iter(placed.values())) if placed else self.placement()).sizes
        return [ShardProxy(self, k, *size) for k, size in enumerate(sizes)]

    def load(self):
        return self.proxies()[0]

    def chunks(self):
        yield from self.proxies()

    def forget_local(self) -> None:
        self.inner._cache = None


class ShardedBackend(Backend):
    """A backend run on every active worker at once, each on its shard."""

    def __init__(self, inner: Backend, session: Session):
        super().__init__(**inner.params)
        self.inner, self.session = inner, session
        #: the workers that run its shards: the first n of those that can run it
        self.workers = session.workers_for(inner.name)
        for attr in ("name", "api", "family", "precision", "limits", "workload"):
            setattr(self, attr, getattr(inner, attr))
        self.scores = getattr(inner, "scores", True)
        self.peer_note = getattr(inner, "peer_note", "")

    def _probes(self) -> list:
        return [(w, self.session.probes[w]["backends"][self.name]) for w in self.workers]

    def unavailable_reason(self) -> Optional[str]:
        s = self.session
        if len(self.workers) >= max(s.n, 1):
            return None
        why = "; ".join(f"worker {s.label(w)}: {s.probes[w]['backends'][self.name]['reason']}"
                        for w in s.capable if w not in self.workers)
        return (f"needs {s.n} workers that can run it, the cluster has {len(self.workers)}"
                + (f" ({why})" if why else ""))

    def device_name(self) -> str:
        counts = Counter(p["device"] for _, p in self._probes())
        return " + ".join(f"{n} x {d}" for d, n in counts.items())

    def refuse_reason(self, unit) -> Optional[str]:
        """Asked of the workers' shards: a piece is refused when one of its shards is."""
        if not isinstance(unit, ShardProxy):
            return self.inner.refuse_reason(unit)
        return unit.owner.placement(self.workers).refusal(self, unit.piece)

    def run(self, unit: ShardProxy) -> Execution:
        return unit.owner.placement(self.workers).run(self, unit)

    def describe(self) -> dict:
        return {**self.inner.describe(), "workers": len(self.workers)}


class LocalReferences(ReferenceStore):
    """The reference store, computing on the client's copy of a sharded piece."""

    def compute(self, sha: str, what: str, pairs, force: bool = False) -> tuple:
        return super().compute(sha, what, pairs.local() if isinstance(pairs, ShardProxy)
                               else pairs, force)


def single_launch(unit, mode: str) -> list:
    """The runner's chunking of a sharded piece: one call, the mode applied on the workers."""
    return [unit.with_mode(mode)]


def sharded_values(client, workload, backend_name: str, ds, n_workers: int,
                   mode: str = "original", args: Optional[dict] = None,
                   per_worker: int = 1, gather: str = "cell") -> tuple:
    """Every piece of ``ds`` through one backend sharded over ``n_workers`` of the client's
    workers, outside the runner (identity checks): (values in dataset order, session, the
    sharded backend, the wrapped dataset)."""
    from .connect import wait_for_workers
    session = Session(client, workload, args or {"dataset": [ds.name],
                                                 "backend": [backend_name]},
                      per_worker=per_worker, gather=gather)
    from ..registry import select
    inner = select([backend_name], workload.name)[0]
    session.probe(wait_for_workers(client, n_workers, 60), [inner])
    session.use(n_workers)
    sb = ShardedBackend(inner, session)
    reason = sb.unavailable_reason()
    if reason:
        raise RuntimeError(f"{backend_name}: {reason}")
    cds = ClusterDataset(ds, session)
    values = np.concatenate([np.asarray(sb.run(p.with_mode(mode)).log10)
                             for p in cds.chunks()])
    return values, session, sb, cds
