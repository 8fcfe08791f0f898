"""Shard mode on the client: every dataset's pieces cut into one shard per worker (or K of them,
``--shards-per-worker``) and kept resident there, every backend run on all shards at once (on
the first N workers that can run it), the results gathered in dataset order.

The ordinary runner (:func:`hmmbench.runner.run_benchmark`) drives everything -- warm-up and
cross-check, timed repeats, stopping, records -- over stand-ins:

* :class:`ClusterDataset` wraps a dataset. Its pieces (the runner's chunks) are
  :class:`ShardProxy` objects that hold no data: the data lives on the workers, loaded once per
  dataset (:class:`Placement`): generated sets are rebuilt there from their name (the sha256 is
  checked against the client's), files are read here once and each worker is sent its shard as
  packed arrays. Nothing is sent again per repeat; results come back as arrays.
* :class:`ShardedBackend` wraps a backend: one call runs one piece on every worker (each runs
  the piece's launches in the chunking mode, as a single process would) and joins the results.
  Its ``total`` is the wall time of the whole sharded call (submit, compute, and either each
  worker's answer -- its results kept in its memory, ``--gather cell`` -- or its results
  themselves, ``--gather call``; the next piece is submitted before a piece's answers are
  collected, so they overlap compute); its stage times are the slowest worker's, so kernel GCUPS
  is the aggregate rate of the critical path.
* Results kept on the workers (:class:`WorkerValues`) travel to the client only when the runner
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

import functools
import time
import uuid
import warnings
from collections import Counter
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..backend import STAGES, Backend, Execution
from ..runner.cell import merge_infos
from ..runner.reference import ReferenceStore
from . import worker as remote
from .connect import SchedulerLost, scheduler_lost
from .shards import shard_bounds
from .timeline import arrivals


def _needs_scheduler(method):
    """A failure of a call while the scheduler is gone is no backend's failure: it ends the
    run (:class:`.connect.SchedulerLost`), never a record."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        client = self.client if isinstance(self, Session) else self.session.client
        if scheduler_lost(client):          # tasks submitted now would wait for ever
            raise SchedulerLost()
        try:
            return method(self, *args, **kwargs)
        except Exception:
            if scheduler_lost(client):
                raise SchedulerLost() from None
            raise
    return call


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
        offset known to half that round trip."""
        for w in workers:
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

    def workers_for(self, name: str) -> list:
        """The first n workers that can run a backend: the others get none of its shards."""
        return [w for w in self.capable if self.probes[w]["backends"][name]["reason"] is None
                ][:self.n]

    def label(self, w: str) -> str:
        p = self.probes[w]
        return f"{p['name']}@{p['host']}"

    @_needs_scheduler
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


class WorkerValues:
    """A sharded call's results, kept in its workers' memory until something reads them (the
    runner's cross-check: ``np.asarray``); then fetched once, from every worker at once."""

    def __init__(self, placement: "Placement", backend, proxy: "ShardProxy", token: str,
                 n: int):
        self._where = (placement, backend, proxy, token)
        self._n = n
        self._values: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return self._n

    def values(self) -> np.ndarray:
        if self._values is None:
            placement, backend, proxy, token = self._where
            self._values = placement.take(backend, proxy, token)
        return self._values

    def __array__(self, dtype=None, copy=None):
        return self.values() if dtype is None else self.values().astype(dtype, copy=False)


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


class Placement:
    """One dataset's shards resident on the active workers, as Dask futures: one future per
    worker holding, per piece, its ``per_worker`` consecutive shards (shard i = worker
    i // per_worker), so that shard order is dataset order."""

    def __init__(self, session: Session, ds: ClusterDataset, workers: list):
        self.session, self.ds = session, ds
        client, wl, inner = session.client, session.workload, ds.inner
        n, k = len(workers), session.per_worker
        self.per_worker = k
        if inner.path is not None and not inner.lazy:
            # a file: read here once, each worker sent its shards as packed arrays
            unit = inner.load()
            shards = [wl.shard(unit, a, b) for a, b in shard_bounds(wl, unit, n * k)]
            specs = [{"units": [shards[w * k:(w + 1) * k]]} for w in range(n)]
        else:
            specs = [{"workload": wl.name, "name": inner.name, "sha256": inner.sha256,
                      "args": session.args}] * n
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
            self.futures = [client.submit(remote.load_part, spec, w, n, k, session.env,
                                          workers=[addr], allow_other_workers=True, pure=False)
                            for w, (spec, addr) in enumerate(zip(specs, workers))]
        described, placed = arrivals(client, [client.submit(remote.describe, f, pure=False)
                                              for f in self.futures])
        #: per worker: seconds from the submit to its shards described back (sent or rebuilt)
        session.scatter[inner.sha256] = {w: t - t0 for w, t in enumerate(placed)}
        #: per shard, per piece: (items, cells, has expected values)
        self.shard_sizes = [[piece[j] for piece in per_worker] for per_worker in described
                            for j in range(k)]
        self.sizes = [(sum(s[p][0] for s in self.shard_sizes),
                       sum(s[p][1] for s in self.shard_sizes),
                       all(s[p][2] for s in self.shard_sizes))
                      for p in range(len(self.shard_sizes[0]))]
        self.holders = list(workers)
        #: the next piece's tasks, submitted while this piece's results come back
        self._ahead: dict = {}

    def release(self) -> None:
        if scheduler_lost(self.session.client):   # nothing to release, nobody to ask
            self._ahead, self.futures = {}, []
            return
        self._drop_ahead()
        if self.futures and self.session.gather == "cell":
            try:
                self.session.client.run(remote.drop_kept)
            except Exception:  # noqa: BLE001 - a worker gone: its kept results went with it
                pass
        self.futures = []
        self.ds.forget_local()

    def _drop_ahead(self) -> None:
        for futures, _, _ in self._ahead.values():
            self.session.client.cancel(futures)
        self._ahead = {}

    def _submit(self, fn, shard: int, *args, **kw):
        """A task on the worker holding a shard (it may move there if that worker is gone)."""
        w = shard // self.per_worker
        return self.session.client.submit(fn, self.futures[w], *args, workers=[self.holders[w]],
                                          allow_other_workers=True, pure=False, **kw)

    @_needs_scheduler
    def refusal(self, backend: "ShardedBackend", piece: int) -> Optional[str]:
        """The first worker's reason to refuse its shards of a piece, else None."""
        s = self.session
        reasons = s.client.gather([self._submit(remote.refusal, w * self.per_worker, piece,
                                                backend.inner, s.env)
                                   for w in range(len(self.futures))])
        return next((r for r in reasons if r), None)

    @_needs_scheduler
    def subset(self, piece: int, idx: np.ndarray):
        """Items ``idx`` of a piece, gathered from the shards that hold them, in idx's order."""
        order = np.argsort(idx, kind="stable")
        ordered = idx[order]
        starts = np.cumsum([0] + [sizes[piece][0] for sizes in self.shard_sizes])
        futures = []
        for i in range(len(self.shard_sizes)):
            lo, hi = np.searchsorted(ordered, starts[i:i + 2])
            if hi > lo:
                futures.append(self._submit(remote.subset, i, piece, i % self.per_worker,
                                            ordered[lo:hi] - starts[i]))
        parts = self.session.client.gather(futures)
        joined = type(parts[0]).concatenate(parts)
        return joined if np.array_equal(order, np.arange(len(idx))) else \
            joined.subset(np.argsort(order))

    def _key(self, backend: "ShardedBackend", piece: int, mode: str, shard: int) -> tuple:
        return (self.ds.inner.sha256, len(self.shard_sizes), backend.name, mode, piece, shard)

    def _submit_piece(self, backend: "ShardedBackend", piece: int, mode: str) -> tuple:
        """(the tasks of a piece's shards, when they were submitted, the call's token)."""
        s = self.session
        token = uuid.uuid4().hex if s.gather == "cell" else None
        submitted = time.perf_counter()
        return [self._submit(remote.run_piece, i, piece, i % self.per_worker, backend.inner,
                             mode, s.launches_fn, s.env,
                             (self._key(backend, piece, mode, i), token) if token else None)
                for i in range(len(self.shard_sizes))], submitted, token

    @_needs_scheduler
    def run(self, backend: "ShardedBackend", proxy: ShardProxy) -> Execution:
        """One piece on every shard. A pass runs its pieces in order, so the next piece is
        submitted before this one's answers are collected: the workers compute it while the
        answers travel (a call's wall then holds its collection and the next piece's start; a
        pass's sum of calls is its wall)."""
        s, k = self.session, proxy.piece
        began, began_epoch = time.perf_counter(), time.time()
        ahead = self._ahead.pop((backend.name, k, proxy.mode), None)
        self._drop_ahead()                        # anything else submitted ahead is stale
        futures, submitted, token = ahead or self._submit_piece(backend, k, proxy.mode)
        if k + 1 < len(self.sizes):
            self._ahead[(backend.name, k + 1, proxy.mode)] = self._submit_piece(
                backend, k + 1, proxy.mode)
        results, arrived = arrivals(s.client, futures)
        ended = time.perf_counter()
        moved = {}
        for i, r in enumerate(results):
            if "refused" in r:
                raise RuntimeError(f"refused on worker {r['name']}@{r['host']}: {r['refused']}")
            w = i // self.per_worker
            if r["worker"] != self.holders[w]:
                s.retried.append({"dataset": self.ds.inner.name, "sha256": self.ds.inner.sha256,
                                  "chunking": proxy.mode, "backend": backend.name, "piece": k,
                                  "shard": i, "planned": self.holders[w], "ran_on": r["worker"],
                                  "host": r["host"]})
                moved[w] = r["worker"]
        for w, addr in moved.items():
            self.holders[w] = addr
        self._tally(backend.name, proxy, results)
        s.timeline.setdefault((self.ds.inner.sha256, proxy.mode, backend.name), []).append(
            self._call_row(k, results, began, began_epoch, submitted, arrived, ended))
        if token is None:
            log10 = np.concatenate([np.asarray(r["log10"], np.float64) for r in results])
        else:
            log10 = WorkerValues(self, backend, proxy, token,
                                 sum(int(r["n_kept"]) for r in results))
        return Execution(
            log10=log10,
            timing={st: max(float(r["timing"].get(st, 0.0)) for r in results) for st in STAGES},
            n_fallback=sum(int(r["n_fallback"]) for r in results),
            info=merge_infos([i for r in results for i in r["infos"]]))

    def _call_row(self, piece, results, began, began_epoch, submitted, arrived, ended) -> dict:
        """One call's timeline, in seconds from the call's start on this clock: per shard, when
        its task was submitted (before 0: submitted ahead, during the call before), started and
        ended on its worker, and its answer arrived here; the stages it reported."""
        s = self.session
        shards = []
        for i, (r, t) in enumerate(zip(results, arrived)):
            row = {"shard": i, "worker": r["name"], "submit": submitted - began,
                   "received": t - began, **{st: float(r["timing"].get(st, 0.0))
                                             for st in STAGES}}
            for edge in ("start", "end"):
                row[edge] = s.on_client_clock(r["worker"], r[f"t_{edge}"]) - began_epoch
            shards.append(row)
        return {"piece": piece, "call": ended - began, "shards": shards}

    @_needs_scheduler
    def take(self, backend: "ShardedBackend", proxy: ShardProxy, token: str) -> np.ndarray:
        """A call's kept results, from every worker at once, in shard order; how long each
        worker's took is the record's result transfer."""
        s, k = self.session, proxy.piece
        t0 = time.perf_counter()
        futures = [self._submit(remote.take_values, i, k, i % self.per_worker, backend.inner,
                                proxy.mode, s.launches_fn, s.env,
                                self._key(backend, k, proxy.mode, i), token)
                   for i in range(len(self.shard_sizes))]
        parts, arrived = arrivals(s.client, futures)
        s.transfers.setdefault((self.ds.inner.sha256, proxy.mode, backend.name), []).append(
            {i // self.per_worker: t - t0 for i, t in enumerate(arrived)})
        for i, r in enumerate(parts):
            if r["rerun"]:
                s.retried.append({"dataset": self.ds.inner.name, "sha256": self.ds.inner.sha256,
                                  "chunking": proxy.mode, "backend": backend.name, "piece": k,
                                  "shard": i, "planned": self.holders[i // self.per_worker],
                                  "ran_on": r["worker"], "host": r["host"],
                                  "what": "results lost with their worker: run again"})
        return np.concatenate([np.asarray(r["log10"], np.float64) for r in parts])

    def _tally(self, name: str, proxy: ShardProxy, results: list) -> None:
        """Per-worker stage sums of each pass (a pass starts at piece 0)."""
        passes = self.session.stats.setdefault((self.ds.inner.sha256, proxy.mode, name), [])
        if proxy.piece == 0 or not passes:
            passes.append({})
        for i, r in enumerate(results):
            w = i // self.per_worker
            items, cells, _ = self.shard_sizes[i][proxy.piece]
            row = passes[-1].setdefault(w, {"index": w, "worker": r["name"], "host": r["host"],
                                            "pid": r.get("pid"), "device": r.get("device"),
                                            "items": 0, "cells": 0, "launches": 0, "wall": 0.0,
                                            "task": 0.0, **{st: 0.0 for st in STAGES}})
            row.update(worker=r["name"], host=r["host"], pid=r.get("pid"),
                       device=r.get("device") or row["device"])
            row["items"] += items
            row["cells"] += cells
            row["launches"] += int(r.get("launches", 0))
            row["wall"] += float(r["wall"])
            row["task"] += float(r.get("task", r["wall"]))
            for st in STAGES:
                row[st] += float(r["timing"].get(st, 0.0))


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
