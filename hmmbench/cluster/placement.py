"""One dataset's shards resident on the workers (:class:`Placement`): placed once, then every
call of a piece runs on all of them, and its results either come back with the call or stay on
the workers (:class:`WorkerValues`) until read. Client side; the tasks are in :mod:`.worker`."""
from __future__ import annotations

import functools
import time
import uuid
import warnings
from typing import Optional

import numpy as np

from ..backend import STAGES, Execution
from ..runner.cell import merge_infos
from . import worker as remote
from .connect import SchedulerLost, failed_on_lost_scheduler, scheduler_lost
from .shards import shard_bounds
from .timeline import arrivals


def needs_scheduler(method):
    """A failure of a call while the scheduler is gone is no backend's failure: it ends the
    run (:class:`.connect.SchedulerLost`), never a record."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        client = getattr(self, "session", self).client
        if scheduler_lost(client):          # tasks submitted now would wait for ever
            raise SchedulerLost()
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            if failed_on_lost_scheduler(client, exc):
                raise SchedulerLost() from None
            raise
    return call


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


class Placement:
    """One dataset's shards resident on the active workers, as Dask futures: one future per
    worker holding, per piece, its ``per_worker`` consecutive shards (shard i = worker
    i // per_worker), so that shard order is dataset order."""

    def __init__(self, session, ds, workers: list):
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
                                          session.memory_limits.get(addr), workers=[addr],
                                          allow_other_workers=True, pure=False)
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

    @needs_scheduler
    def refusal(self, backend: "ShardedBackend", piece: int) -> Optional[str]:
        """The first worker's reason to refuse its shards of a piece, else None."""
        s = self.session
        reasons = s.client.gather([self._submit(remote.refusal, w * self.per_worker, piece,
                                                backend.inner, s.env)
                                   for w in range(len(self.futures))])
        return next((r for r in reasons if r), None)

    @needs_scheduler
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
                             (self._key(backend, piece, mode, i), token) if token else None,
                             s.memory_limits.get(self.holders[i // self.per_worker]))
                for i in range(len(self.shard_sizes))], submitted, token

    @needs_scheduler
    def run(self, backend: "ShardedBackend", proxy) -> Execution:
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

    @needs_scheduler
    def take(self, backend: "ShardedBackend", proxy, token: str) -> np.ndarray:
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

    def _tally(self, name: str, proxy, results: list) -> None:
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
