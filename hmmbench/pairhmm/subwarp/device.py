"""The device resources one cuda-subwarp backend keeps across runs, so that a call allocates,
creates and frees nothing once its size class has run: device buffers, streams, a pool of
events, the multi-tile scratch and page-locked result buffers (1m's 110 per-region calls pay none of that).

Calls in flight (``hmmbench run --in-flight N``): each outstanding call needs a set of its own, a
:class:`Lane` (resources + pinned staging slots); :class:`Lanes` hands them out round-robin and
gives a lane to a new call only once the lane's previous call has been collected;
:func:`sized_lane` gives a lane's buffers and streams for calls of given sizes (both call paths,
``call`` and ``small``)."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ...apis import cuda as glue
from .layout import MAX_P, THREADS_PER_BLOCK, Bin
from .staging import StagingSlots, headroom

#: Lanes at most (calls in flight on one backend); a call beyond waits for the oldest.
MAX_LANES = 16
#: A small call's device result buffer starts with its queue heads ({first slot, count} per
#: recompute queue, SW_MAX_BINS at most), the results follow: one copy back brings both.
HEADS_BYTES = 512


class DeviceResources:
    def __init__(self, sm_count: Callable[[], int] = lambda: glue.device_attributes()["sm_count"]):
        self._sm_count = sm_count  # the backend's cached device attribute
        self._buffers = None
        self._streams: list = []
        self._events: list = []   # reused by every run (see mark)
        self._n_events = 0
        self._results: tuple = (None, None)   # page-locked result and queue-head buffers
        self._joined = None   # page-locked queue heads + results of a small call
        self._gate = None     # the page-locked flag sw_gate polls
        self._tickets = 0     # the last ticket handed out (gate)

    def buffers(self) -> glue.DeviceBuffers:
        if self._buffers is None:
            self._buffers = glue.DeviceBuffers()
        return self._buffers

    def streams(self, n: int) -> list:
        drv = glue.driver()
        while len(self._streams) < n:
            self._streams.append(drv.Stream())
        return self._streams[:n]

    def restart_events(self) -> None:
        """A new run records the pool's events again from the first."""
        self._n_events = 0

    def mark(self, stream):
        """An event recorded on ``stream``, from a pool: every event of a run has completed when
        run() returns, so the next run records them again instead of creating new ones."""
        if self._n_events == len(self._events):
            self._events.append(glue.driver().Event())
        ev = self._events[self._n_events]
        self._n_events += 1
        ev.record(stream)
        return ev

    def scratch(self, b: Bin, double: bool, max_hap_len: int) -> tuple:
        """(multi-tile boundary-row scratch buffer, row stride) for bin ``b``: sized for the
        largest grid, grown before a run's first event (a reallocation frees device memory,
        which synchronizes the device); one per configuration and kind, since two multi-tile
        queues (a cascade's float64 level beside another queue's) may run side by side."""
        if not b.multi_tile:
            return 0, 0
        cap = self._sm_count() * 16
        stride = max_hap_len + 8 + MAX_P  # steps rounded up to 4, + 4 read ahead
        quad = 32 if double else 16
        buf = self.buffers().get(f"scratch{'_d' if double else ''} {b.label}",
                                 headroom(cap * (THREADS_PER_BLOCK // b.p) * stride * quad))
        return buf, stride

    def result_buffers(self, n_out: int, n_heads: int) -> tuple:
        """Grow-only page-locked buffers for the results and the queue heads: the D2H copies
        are then plain DMA, not staged through the driver's pageable bounce buffer."""
        out, heads = self._results
        drv = glue.driver()
        if out is None or len(out) < n_out:
            out = drv.pagelocked_empty(headroom(n_out * 8) // 8, np.float64)
        if heads is None or len(heads) < n_heads:
            heads = drv.pagelocked_empty(max(n_heads, 1024), np.int32)
        self._results = (out, heads)
        return out[:n_out], heads[:n_heads]

    def joined_results(self, n_out: int, n_heads: int) -> tuple:
        """A small call's copy back target: (the page-locked buffer to copy into -- HEADS_BYTES
        of queue heads, then the results --, its results, its queue heads); grow-only."""
        lead = HEADS_BYTES // 8
        if self._joined is None or len(self._joined) < lead + n_out:
            self._joined = glue.driver().pagelocked_empty(headroom((lead + n_out) * 8) // 8,
                                                          np.float64)
        whole = self._joined[:lead + n_out]
        return whole, whole[lead:], whole[:lead].view(np.int32)[:n_heads]

    def gate(self) -> tuple:
        """(a new ticket, the address of the page-locked flag that releases it): sw_gate holds
        its stream until ``release(ticket)``. Tickets only grow, so a gate of an earlier call is
        never held by a later one. Page-locked memory is read in place by any GPU with unified
        addressing, at the host's address (the CUDA driver's Unified Addressing)."""
        if self._gate is None:
            self._gate = glue.driver().pagelocked_empty(1, np.int32)
            self._gate[0] = self._tickets
        self._tickets += 1
        return self._tickets, np.uintp(self._gate.ctypes.data)

    def release(self, ticket: int) -> None:
        self._gate[0] = ticket

    def close(self) -> None:
        if self._buffers is not None:
            self._buffers.free()
            self._buffers = None
        self._streams = []
        self._events = []
        self._results = (None, None)
        self._joined = None
        self._gate = None


class Lane:
    """One call's resource set: device resources, pinned staging slots, and the call using it
    (its handle) until that call has been collected."""

    def __init__(self, index: int, res: DeviceResources, staging: StagingSlots):
        self.index, self.res, self.staging = index, res, staging
        self.busy = None     # the outstanding call's handle (``finish()`` frees the lane)
        self.ticket = 0      # submission order of that call
        self.sized = None    # (sizes, buffers and streams) of its last call (SubwarpCall)

    def close(self) -> None:
        if self.sized is not None:
            _close_launches(self.sized[2])
        self.res.close()
        self.staging.close()
        self.busy = self.sized = None


def _close_launches(per_plan: dict) -> None:
    """Frees what the small path's launches per plan hold on the driver (their graphs)."""
    for launches in per_plan.values():
        launches.close()


class Lanes:
    """Resource sets reused round-robin. A lane serves a new call only when its previous call
    has been collected (its events, buffers and pinned slots are then free); a new lane is made
    only when every lane is busy, so N calls in flight use N lanes and one call at a time uses
    lane 0 only. Past ``MAX_LANES`` the oldest outstanding call is collected first."""

    def __init__(self, first: Lane, make: Callable[[int], Lane]):
        self.all = [first]
        self._make = make
        self._next = 0
        self._tickets = 0

    def take(self, handle) -> Lane:
        n = len(self.all)
        lane: Optional[Lane] = self.all[self._next]  # the next in turn, mostly free
        if lane.busy is not None:
            lane = next((self.all[(self._next + i) % n] for i in range(1, n)
                         if self.all[(self._next + i) % n].busy is None), None)
        if lane is None and n < MAX_LANES:
            self.all.append(self._make(n))
            lane = self.all[-1]
        if lane is None:
            oldest = min(self.all, key=lambda x: x.ticket)
            oldest.busy.result()  # collects it: the lane is free again
            lane = oldest
        self._tickets += 1
        lane.busy, lane.ticket = handle, self._tickets
        self._next = (lane.index + 1) % len(self.all)
        return lane

    def close(self) -> None:
        for lane in self.all:
            lane.close()
        del self.all[1:]
        self._next = 0


def sized_lane(lane, n_keys: int, sizes: tuple) -> tuple:
    """The lane's (sizes, buffers and streams, the small path's launches per plan, the buffers'
    addresses) for calls of these (grow-only) sizes: kept with the lane, so the next call of
    the same sizes takes them as they are; asked again when the lane's last call had others.
    The launches per plan hold addresses only: kept while every buffer stays where it was."""
    if lane.sized is None or lane.sized[0] != sizes:
        bufs = _lane_buffers(lane, n_keys, *sizes)
        where = _addresses(bufs)
        kept = lane.sized[2] if lane.sized is not None and lane.sized[3] == where else {}
        if lane.sized is not None and kept is not lane.sized[2]:
            _close_launches(lane.sized[2])  # their addresses are gone
        lane.sized = (sizes, bufs, kept, where)
    return lane.sized


def _addresses(bufs: tuple) -> tuple:
    """What a lane's buffers are: the objects passed to the driver (pinned and device slots,
    streams; the superseded ones are alive until compared) and the addresses used as ints."""
    pinned, dev_slots, work, queues, out, *streams = bufs
    return (tuple(map(id, pinned)), tuple(map(id, dev_slots)),
            tuple(int(v) for w in work for v in w.values()), int(queues), int(out),
            tuple(id(x) for x in streams[:3]))


def _lane_buffers(lane, n_keys, n_slots, slot_bytes, mu, mp, nb, nq, n_chunks, out_bytes,
                  streams_on, small) -> tuple:
    """The buffers and streams of a lane for calls of these sizes: pinned slots and their
    device twins, work buffers per slot, queue heads, results, streams (main, copy, layout,
    per bin, per queue, per bin for odd chunks). A small call: one stream, the queue heads in
    front of the results."""
    res, bufs = lane.res, lane.res.buffers()
    pinned = lane.staging.slots(n_slots, slot_bytes)
    dev_slots = [bufs.get(f"slot{i}", slot_bytes) for i in range(n_slots)]
    work = [{"raw": bufs.get(f"raw{i}", mu * 16), "key_rank": bufs.get(f"kr{i}", mu * 8),
             "items": bufs.get(f"items{i}", mu * 16),
             "counters": bufs.get(f"counters{i}", (n_keys + nb) * 4),
             "bin_range": bufs.get(f"bin_range{i}", nb * 8),
             "fb_items": bufs.get(f"fb_items{i}", mp * 16),
             # a cascaded queue's float64 level (rescue.py): its own items, same slots
             "fb_items2": bufs.get(f"fb_items2_{i}", mp * 16)}
            for i in range(n_slots)]
    if small:
        assert nb * 16 <= HEADS_BYTES
        out = bufs.get("out", HEADS_BYTES + out_bytes)
        main = res.streams(1)[0]
        return (pinned, dev_slots, work, int(out), int(out) + HEADS_BYTES, main, main, main,
                [main] * nb, [main] * nq, [main] * nb)
    queues_dev = bufs.get("queues", n_chunks * nb * 16)  # sw_layout_scan: 2 x nb heads
    streams = res.streams(3 + 2 * nb + nq)
    main, q0 = streams[0], 3 + nb
    per_bin_queue_odd = (streams[3:q0], streams[q0:q0 + nq], streams[q0 + nq:q0 + nq + nb]) \
        if streams_on else ([main] * nb, [main] * nq, [main] * nb)
    return (pinned, dev_slots, work, queues_dev, bufs.get("out", out_bytes), *streams[:3],
            *per_bin_queue_odd)
