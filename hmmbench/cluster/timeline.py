"""Where a sharded call's time goes, per worker: the answers' arrival times, and the record's
per-worker stage medians and timeline (from what :class:`.sharded.Placement` collected)."""
from __future__ import annotations

import statistics
import time

from ..backend import STAGES


#: how often a wait for tasks looks whether the scheduler is still there
POLL_S = 1.0


def arrivals(client, futures: list) -> tuple:
    """(the futures' results in their order, when the client learned each was done:
    perf_counter seconds). A wait never outlives the scheduler: every POLL_S it looks whether
    the client lost it (:class:`.connect.SchedulerLost`)."""
    from .connect import SchedulerLost, scheduler_lost
    arrived = [0.0] * len(futures)

    def note(i):
        def done(_future):
            arrived[i] = time.perf_counter()
        return done
    for i, f in enumerate(futures):
        f.add_done_callback(note(i))
    results = []
    for f in futures:
        while True:
            try:
                results.append(f.result(timeout=POLL_S))
                break
            except TimeoutError:
                if scheduler_lost(client):
                    raise SchedulerLost() from None
    # a callback runs on a thread of its own: the last may lag the result by a moment
    now = time.perf_counter()
    return results, [t or now for t in arrived]


def worker_stages(session, record) -> list:
    """Each shard's median per-pass stages, wall (its launches), task (the whole task on the
    worker), items and cells over the record's timed passes, its last ``repeats`` (the checked
    pass and any warm-up passes before them left out)."""
    passes = session.stats.get((record.dataset_sha256, record.chunking, record.backend)) or []
    timed = passes[-record.repeats:] if record.repeats else passes[1:] or passes
    if not timed:
        return []
    out = []
    for i in sorted(timed[-1]):
        rows = [p[i] for p in timed if i in p]
        last = rows[-1]
        out.append({**{k: last[k] for k in ("index", "worker", "host", "pid", "device",
                                             "items", "cells", "launches")},
                    **{k: statistics.median(r[k] for r in rows)
                       for k in ("wall", "task") + STAGES}})
    return out


def worker_timeline(session, record) -> list:
    """Where a sharded call's time goes, per worker: medians over the record's timed calls of
    when (seconds from the call's start, on the client's clock) its tasks were submitted,
    started and ended on it, and its answer arrived, with its stage times; the call's wall;
    the dataset's scatter to it, and (``--gather cell``) the median read of its kept results."""
    key = (record.dataset_sha256, record.chunking, record.backend)
    passes: list = []
    for call in session.timeline.get(key) or []:
        if call["piece"] == 0 or not passes:
            passes.append([])
        passes[-1].append(call)
    timed = passes[-record.repeats:] if record.repeats else passes[1:] or passes
    calls = [c for p in timed for c in p]
    if not calls:
        return []
    per_worker: dict = {}
    for c in calls:
        mine: dict = {}
        for sh in c["shards"]:
            w = sh["shard"] // session.per_worker
            row = mine.setdefault(w, {"worker": sh["worker"], "submit": sh["submit"],
                                      "start": sh["start"], "end": sh["end"],
                                      "received": sh["received"], "call": c["call"],
                                      **{st: 0.0 for st in STAGES}})
            row.update(submit=min(row["submit"], sh["submit"]), start=min(row["start"],
                                                                          sh["start"]),
                       end=max(row["end"], sh["end"]), received=max(row["received"],
                                                                   sh["received"]))
            for st in STAGES:
                row[st] += sh[st]
        for w, row in mine.items():
            per_worker.setdefault(w, []).append(row)
    scatter = session.scatter.get(record.dataset_sha256, {})
    reads = session.transfers.get(key) or []
    out = []
    for w, rows in sorted(per_worker.items()):
        got = [r[w] for r in reads if w in r]
        out.append({"index": w, "worker": rows[-1]["worker"], "calls": len(rows),
                    **{f"{k}_s": statistics.median(r[k] for r in rows)
                       for k in ("submit", "start") + STAGES + ("end", "received", "call")},
                    "scatter_s": scatter.get(w),
                    "result_transfer_s": statistics.median(got) if got else None})
    return out
