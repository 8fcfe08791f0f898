"""cuda-subwarp's host path without a GPU: a recording stand-in for the CUDA driver runs run()'s
control flow (no kernel computes anything) and proves what a repeated call no longer pays for --
no device or page-locked allocation, no event creation, no compilation -- and that the kernel
time is the union of the launches' own event spans; calls in flight (``submit``) each get a lane
of their own, reused only once its call has been collected."""
from __future__ import annotations

import struct
import threading
from collections import Counter

import numpy as np
import pytest

from hmmbench.apis import cuda as glue
from hmmbench.apis import cuda_timing
from hmmbench.pairhmm.subwarp import cuda as sw
from hmmbench.pairhmm.subwarp import variants as swv
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches
from hmmbench.pairhmm.model import Batch, PairSet, Read, pack
from hmmbench.pairhmm.subwarp.staging import (
    CHUNK_PARTS, STAGED, STREAM_ORDER, chunk_offsets, int_views, part_ranges, stage_chunk_part,
    stage_whole, whole_offsets)
from hmmbench.pairhmm.subwarp.call import SubwarpHandle
from hmmbench.pairhmm.subwarp.device import MAX_LANES, Lanes
from hmmbench.runner.cell import run_launches
from helpers.pairgen import deep_pairs, ragged_pairs
from helpers.subwarp_staging_reference import STAGE_TASKS, chunk_sources, stage, staging_offsets


class _Ordered(Counter):
    """Counts by kind, and keeps the order of the counted calls (``order``)."""

    def __init__(self):
        super().__init__()
        self.order: list = []

    def __setitem__(self, kind, n):
        self.order.append(kind)
        super().__setitem__(kind, n)


class FakeDriver:
    """The pycuda.driver calls run() makes, counted by kind; events get a fake clock (1 ms per
    record); launches (kernel, grid, block, shared bytes, arguments) and uploaded bytes are
    kept."""

    def __init__(self):
        self.calls = _Ordered()
        self.clock = 0.0
        self.launch_spans = []
        self.launches: list = []
        self.launch_streams: list = []
        self.uploads: list = []
        self.idle = True   # what Event.query() says: every event complete

    class _Alloc:
        """Like pycuda's DeviceAllocation: an address through int() only (no arithmetic)."""
        def __init__(self, addr):
            self._addr = addr

        def __int__(self):
            return self._addr

        def free(self):
            pass

    def mem_alloc(self, nbytes):
        self.calls["mem_alloc"] += 1
        return self._Alloc(0x1000 * (self.calls["mem_alloc"] + 1))

    def pagelocked_empty(self, n, dtype):
        self.calls["pagelocked_empty"] += 1
        return np.zeros(n, dtype)

    def Event(self):  # noqa: N802 - pycuda's name
        self.calls["Event"] += 1
        drv = self

        class _Event:
            t = None

            def record(self, stream=None):
                drv.calls["record"] += 1
                drv.clock += 1.0
                self.t = drv.clock

            def time_since(self, other):
                drv.calls["time_since"] += 1
                return self.t - other.t

            def synchronize(self):
                drv.calls["sync"] += 1

            def query(self):
                drv.calls["query"] += 1
                return drv.idle
        return _Event()

    def Stream(self):  # noqa: N802
        self.calls["Stream"] += 1
        drv = self

        class _Stream:
            def wait_for_event(self, ev):
                drv.calls["wait"] += 1
        return _Stream()

    def memcpy_htod_async(self, dst, src, stream):
        self.calls["h2d"] += 1
        self.uploads.append(bytes(src))

    def memset_d32_async(self, *args):
        self.calls["memset"] += 1

    def memcpy_dtoh_async(self, dst, src, stream):
        self.calls["d2h"] += 1

    class function_attribute:  # noqa: N801
        MAX_DYNAMIC_SHARED_SIZE_BYTES = 0


#: An H100's attributes as ``glue.device_attributes`` gives them.
FAKE_H100 = {"name": "Fake H100", "sm_count": 132, "arch": "sm_90", "compute_capability": "9.0",
             "registers_per_sm": 65536, "shared_per_sm": 233472, "threads_per_sm": 2048,
             "blocks_per_sm": 32, "reserved_shared_per_block": 1024}


def kernel_of(name) -> tuple:
    """(kernel name, its defines) of a fake function's name: (kernel, (source, defines)) for
    a compiled kernel, the bare kernel name otherwise."""
    return (name[0], dict(name[1][1])) if isinstance(name, tuple) else (name, {})


class FakeFunction:
    """A compiled kernel: its register cap, or the registers its ``__launch_bounds__`` minimum
    blocks allow (128 without), no static shared memory."""
    def __init__(self, drv, name):
        self.drv, self.name = drv, name
        defines = kernel_of(name)[1]
        self.num_regs = defines.get("SW_MAXNREG") or \
            {2: 255, 3: 168, 4: 128, 6: 80}.get(defines.get("SW_MIN_BLOCKS", 0), 128)
        self.shared_size_bytes = 0

    def prepare(self, signature):
        pass

    def set_attribute(self, *args):
        pass

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.drv.calls["launch"] += 1
        self.drv.launches.append((self.name, grid, block, shared_size, args))
        self.drv.launch_streams.append(stream)
        self.drv.clock += 0.5   # the kernel runs between its begin and end events


@pytest.fixture
def fake_cuda(monkeypatch):
    drv = FakeDriver()

    class Module:
        def __init__(self, key):
            self.key = key

        def get_function(self, name):
            return FakeFunction(drv, (name, self.key))

    def compile(source, defines=None, options=()):  # noqa: A001
        drv.calls["compile"] += 1
        return Module((source, tuple(sorted((defines or {}).items()))))
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "compile", compile)
    monkeypatch.setattr(glue, "device_attributes", lambda: dict(FAKE_H100))
    monkeypatch.setattr(cuda_timing, "sm_clock_mhz", lambda: 1980)
    monkeypatch.setattr(glue, "graphs_available", lambda: False)  # (fake_graphs turns them on)
    return drv


class FakeGraph:
    """A captured graph: the launches issued while capturing (the fake driver runs nothing, so
    they are only recorded), appended again to the driver's launches at each replay."""

    def __init__(self, drv, stream):
        drv.calls["capture"] += 1
        self.drv, self.stream, self.first = drv, stream, len(drv.launches)
        self.launches: list = []
        self.destroyed = False

    def end(self):
        self.launches = self.drv.launches[self.first:]
        return self

    def launch(self, stream):
        assert stream is self.stream and not self.destroyed
        self.drv.calls["graph_launch"] += 1
        self.drv.launches.extend(self.launches)

    def destroy(self):
        self.destroyed = True


@pytest.fixture
def fake_graphs(fake_cuda, monkeypatch):
    """fake_cuda with the driver's graph calls: the graphs made, in order."""
    made = []

    def capture(stream):
        made.append(FakeGraph(fake_cuda, stream))
        return made[-1]
    monkeypatch.setattr(glue, "graphs_available", lambda: True)
    monkeypatch.setattr(glue, "CapturedGraph", capture)
    return made


def test_repeated_calls_allocate_create_and_compile_nothing(fake_cuda):
    regions = launches(resolve("shape-100x150@2000").load(), "original")   # 125 small regions
    b = swv.backends()[0]
    first = [b.run(p) for p in regions]
    after_first = Counter(fake_cuda.calls)
    again = [b.run(p) for p in regions]
    spent = fake_cuda.calls - after_first
    for what in ("mem_alloc", "pagelocked_empty", "Event", "Stream", "compile"):
        assert spent[what] == 0, what
    assert spent["launch"] == after_first["launch"] and spent["h2d"] == len(regions)
    assert [len(e.log10) for e in again] == [p.n_pairs for p in regions]
    # the results are copies: the next call's page-locked buffer does not overwrite them
    assert not np.shares_memory(again[0].log10, again[1].log10)
    assert first[0].info["gpu"] == "Fake H100"


def test_kernel_time_is_the_union_of_launch_spans(fake_cuda):
    pairs = resolve("shape-100x150@3000").load()
    b = swv.backends()[0]
    b.chunk_pairs = 1000       # three chunks, staged by worker threads
    ex = b.run(pairs)
    assert ex.info["chunks"] == 3 and len(ex.log10) == pairs.n_pairs
    # fake clock: each launch lasts 0.5 ms between its events, events themselves 1 ms apart;
    # the layout group spans its three launches and memset
    k = ex.timing["kernel"]
    assert 0 < k < ex.info["kernel_span_s"] <= ex.info["gpu_span_s"]
    assert ex.info["float32_kernel_s"] <= k
    b.close()


def test_odd_chunks_run_their_single_tile_bins_on_streams_of_their_own(fake_cuda):
    """``alternate_bin_streams``: even chunks launch a bin on its stream, odd ones on a second
    one, so that a chunk's blocks may fill the last round of the chunk before; a multi-tile
    bin (its launches share the scratch) keeps one stream; off, every chunk uses the first."""
    short, long = resolve("shape-100x150@1500").load(), resolve("shape-1100x700@1500").load()
    pairs = PairSet.concatenate([short, long, short])
    b = swv.backends()[0]
    b.chunk_pairs = 1000  # four or five chunks of whole batches
    streams_of: dict = {}
    for alternate in (1, 0):
        b.alternate_bin_streams = alternate
        first = len(fake_cuda.launches)
        ex = b.run(pairs)
        assert ex.info["chunks"] >= 4
        chunk, bins = -1, {False: {}, True: {}}  # multi-tile: {chunk: stream}
        for (name, *_rest), s in zip(fake_cuda.launches[first:], fake_cuda.launch_streams[first:]):
            kernel, d = kernel_of(name)
            chunk += kernel == "sw_layout_count"
            # a bin: float32, single-tile without exponents (the cascades' kernels over 1e-28
            # have them) or multi-tile (its queue is float64)
            multi_tile = bool(d.get("SW_MULTI_TILE"))
            if kernel == "subwarp_forward" and not d.get("SW_DOUBLE") \
                    and (multi_tile or not d.get("SW_EXP_SCALE")):
                bins[multi_tile][chunk] = s
        assert len(bins[False]) >= 3 and len(bins[True]) >= 2
        streams_of[alternate] = bins
    one_tile, multi = streams_of[1][False], streams_of[1][True]
    assert len({id(one_tile[c]) for c in one_tile if c % 2 == 0}) == 1
    assert len({id(one_tile[c]) for c in one_tile if c % 2 == 1}) == 1
    assert {c % 2 for c in one_tile} == {0, 1}
    assert len({id(s) for s in one_tile.values()}) == 2
    assert len({id(s) for s in multi.values()}) == 1
    assert len({id(s) for s in streams_of[0][False].values()}) == 1
    b.close()


def test_each_chunk_is_held_until_its_launches_are_enqueued(fake_cuda, monkeypatch):
    """A multi-chunk call's layout stream waits in sw_gate for each chunk's ticket, which the
    host releases only once the chunk's last launch is enqueued (so no host gap falls between
    the events that time its kernels); tickets grow across chunks and calls; a chunk enqueued
    behind unfinished work is not held; gate_chunks 0 launches no gate."""
    from hmmbench.pairhmm.subwarp.device import DeviceResources
    released = []
    release = DeviceResources.release

    def record(res, ticket):
        released.append((ticket, len(fake_cuda.launches)))
        release(res, ticket)
    monkeypatch.setattr(DeviceResources, "release", record)
    pairs = resolve("shape-100x150@3000").load()
    b = swv.backends()[0]
    b.chunk_pairs = 1000       # three chunks
    for call in range(2):
        first = len(fake_cuda.launches)
        ex = b.run(pairs)
        launched = fake_cuda.launches[first:]
        streams = fake_cuda.launch_streams[first:]
        gates = [i for i, (name, *_) in enumerate(launched) if name[0] == "sw_gate"]
        assert len(gates) == ex.info["chunks"] == 3
        tickets = [int(launched[i][4][1]) for i in gates]
        assert tickets == list(range(3 * call + 1, 3 * call + 4))
        assert [t for t, _ in released[3 * call:]] == tickets
        for c, i in enumerate(gates):
            assert launched[i + 1][0][0] == "sw_layout_count" and streams[i + 1] is streams[i]
            end = gates[c + 1] if c + 1 < len(gates) else len(launched)
            # released after the chunk's bins and recompute, before the next chunk's gate
            assert released[3 * call + c][1] - first == end
            assert any(name[0] == "subwarp_forward" for name, *_ in launched[i:end])
        flag = b._lanes.all[0].res._gate   # the page-locked flag, read by the GPU in place
        assert int(launched[gates[0]][4][0]) == flag.ctypes.data and flag[0] == tickets[-1]
    # behind running work (the chunk before not done) a chunk is not held: only chunk 0 is
    fake_cuda.idle = False
    first = len(fake_cuda.launches)
    b.run(pairs)
    assert [i for i, (n, *_) in enumerate(fake_cuda.launches[first:]) if n[0] == "sw_gate"] == [0]
    fake_cuda.idle = True
    b.gate_chunks = 0
    first = len(fake_cuda.launches)
    b.run(pairs)
    assert not [n for n, *_ in fake_cuda.launches[first:] if n[0] == "sw_gate"]
    b.close()


#: the copies of a multi-chunk call's first chunk (``SubwarpCall._upload``): two ranges of
#: integers and each sequence array
STREAMED_COPIES = 2 + CHUNK_PARTS - 1


def test_a_multi_chunk_calls_chunks_upload_their_own_bytes(fake_cuda):
    """Each chunk packed by its own sizes: a smaller chunk (the ramp's first ones, a call's last)
    uploads less than a full one, and the call uploads about its input's bytes, not a full
    slot per chunk."""
    pairs = resolve("shape-100x150@3000").load()
    sizes = {}
    for ramp in (3, 0):
        b = swv.backends()[0]
        b.chunk_pairs, b.ramp_chunks = 1000, ramp
        fake_cuda.uploads.clear()
        ex = b.run(pairs)
        # chunk 0 streamed part by part: read_off, the integers after the haplotype bytes and
        # the six sequence arrays, each its own copy
        up = [len(u) for u in fake_cuda.uploads]
        sizes[ramp] = [sum(up[:STREAMED_COPIES])] + up[STREAMED_COPIES:]
        assert len(sizes[ramp]) == ex.info["chunks"]
        b.close()
    assert sizes[3][0] * 6 < sizes[0][0]
    assert sizes[3][:3] == sorted(sizes[3][:3])
    assert sum(sizes[3]) == pytest.approx(sum(sizes[0]), rel=0.02)


def test_the_first_chunk_staged_by_thread_uploads_the_same_bytes(fake_cuda):
    """``stream_by_thread``: the first chunk's sequence arrays staged by one task per thread
    (each a piece of every array, an array uploaded once every task's piece is in) give the
    same copies, byte for byte and in the same order, as a task per array piece; with any
    number of tasks."""
    pairs = resolve("shape-100x150@3000").load()
    got = {}
    for by_thread, pieces in ((0, 0), (1, 0), (1, 3), (1, 1)):
        b = swv.backends()[0]
        b.chunk_pairs, b.stream_by_thread, b.stream_pieces = 1000, by_thread, pieces
        fake_cuda.uploads.clear()
        b.run(pairs)
        got[by_thread, pieces] = list(fake_cuda.uploads)
        b.close()
    assert len(got[0, 0]) > STREAMED_COPIES
    for key, uploads in got.items():
        assert uploads == got[0, 0], key
    # not streamed: the first chunk in one copy, the same bytes as the streamed copies cover
    b = swv.backends()[0]
    b.chunk_pairs, b.stream_first = 1000, 0
    fake_cuda.uploads.clear()
    b.run(pairs)
    b.close()
    one = fake_cuda.uploads
    assert len(one) == len(got[0, 0]) - STREAMED_COPIES + 1
    assert one[1:] == got[0, 0][STREAMED_COPIES:]


def test_a_large_call_of_one_chunk_stages_with_the_threads(fake_cuda, monkeypatch):
    """From POOL_FROM_PAIRS pairs a call of one chunk is staged by the worker threads and
    streamed part by part, as a multi-chunk call's first chunk (its bytes are the same as one
    copy of the slot staged by the calling thread); under it, by the calling thread alone."""
    from hmmbench.pairhmm.subwarp import call as subwarp_call
    pairs = resolve("shape-100x150@70000").load()
    assert pairs.n_pairs >= subwarp_call.POOL_FROM_PAIRS
    got = {}
    for pool_from in (subwarp_call.POOL_FROM_PAIRS, pairs.n_pairs + 1):
        monkeypatch.setattr(subwarp_call, "POOL_FROM_PAIRS", pool_from)
        b = swv.backends()[0]
        assert pairs.n_pairs >= b.small_below
        fake_cuda.uploads.clear()
        ex = b.run(pairs)
        assert ex.info["chunks"] == 1
        got[pool_from] = list(fake_cuda.uploads)
        b.close()
    threads, alone = got.values()
    assert len(threads) == STREAMED_COPIES and len(alone) == 1
    assert sum(map(len, threads)) <= len(alone[0]) and all(u in alone[0] for u in threads)


def test_a_failing_staging_task_of_the_first_chunk_raises_in_the_call(fake_cuda, monkeypatch):
    """A task staging the first chunk by thread that fails (here on the third array) opens
    every gate it holds, so the call raises its error instead of waiting for ever."""
    import hmmbench.pairhmm.subwarp.call as call_mod
    real = call_mod.stage_chunk_part

    def failing(*args):
        if args[-3] == 2 and args[-1] > 1:  # part 2, staged in pieces
            raise MemoryError("staging failed")
        return real(*args)

    monkeypatch.setattr(call_mod, "stage_chunk_part", failing)
    b = swv.backends()[0]
    b.chunk_pairs, b.stream_by_thread = 1000, 1
    outcome = []

    def call():
        try:
            b.run(resolve("shape-100x150@3000").load())
        except MemoryError as exc:
            outcome.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "the call waits for a gate that never opens"
    assert outcome and "staging failed" in str(outcome[0])
    b.close()


def test_batched_calls_in_flight_are_one_call_each(fake_cuda):
    """cuda-subwarp-batched: 10 region calls with 4 in flight reach the device as 3 calls (4, 4
    and 2 regions): 3 uploads, 3 copies back, one lane, the same bin launches as the calls'
    pairs merged; each region gets its own pairs' results."""
    regions = launches(resolve("shape-100x150@2000").load(), "original")[:10]
    b = {x.name: x for x in swv.backends()}["cuda-subwarp-batched"]
    assert b.params["batch_calls"] is True
    b.run(regions[0])                          # warm-up: plan, lane, buffers
    before = Counter(fake_cuda.calls)
    outs, _ = run_launches(b, regions, in_flight=4)
    spent = fake_cuda.calls - before
    assert spent["h2d"] == 3 and spent["d2h"] == 3 and spent["sync"] == 3
    assert len(b._lanes.all) == 1
    assert [len(e.log10) for e in outs] == [p.n_pairs for p in regions]
    assert [e.info.get("batched_calls") for e in outs] == [4] * 8 + [2] * 2


def test_calls_in_flight_each_on_a_lane_of_its_own(fake_cuda, monkeypatch):
    regions = launches(resolve("shape-100x150@2000").load(), "original")[:20]
    b = swv.backends()[0]
    log = []
    take, result = Lanes.take, SubwarpHandle.result

    def logged_take(self, handle):
        lane = take(self, handle)
        log.append(("take", lane.index))
        return lane

    def logged_result(self):
        lane = None if self.call is None else self.call.lane
        ex = result(self)
        if lane is not None:
            log.append(("done", lane.index))
        return ex
    monkeypatch.setattr(Lanes, "take", logged_take)
    monkeypatch.setattr(SubwarpHandle, "result", logged_result)
    outs, _ = run_launches(b, regions, in_flight=3)
    assert [len(e.log10) for e in outs] == [p.n_pairs for p in regions]
    assert not np.shares_memory(outs[0].log10, outs[1].log10)
    # N in flight -> N resource sets: their own streams, device buffers, events, pinned slots
    lanes = b._lanes.all
    assert len(lanes) == 3 and [x.index for x in lanes] == [0, 1, 2]
    streams = [{id(s) for s in x.res._streams} for x in lanes]
    assert all(streams) and not (streams[0] & streams[1] or streams[1] & streams[2])
    outs_dev = {int(x.res.buffers().get("out", 1)) for x in lanes}
    assert len(outs_dev) == 3
    assert len({id(x.staging._bufs[0]) for x in lanes}) == 3
    assert len({id(e) for x in lanes for e in x.res._events}) == sum(
        len(x.res._events) for x in lanes)
    # no lane taken again before its call was collected; round-robin
    busy: set = set()
    for what, i in log:
        if what == "take":
            assert i not in busy
            busy.add(i)
        else:
            busy.remove(i)
    assert [i for what, i in log if what == "take"][:6] == [0, 1, 2, 0, 1, 2]
    # one call at a time: lane 0 only, as before
    one = swv.backends()[0]
    for p in regions[:4]:
        one.run(p)
    assert len(one._lanes.all) == 1


def test_lanes_are_bounded_the_oldest_call_collected_first(fake_cuda):
    regions = launches(resolve("shape-100x150@2000").load(), "original")
    b = swv.backends()[0]
    handles = [b.submit(p) for p in regions[:MAX_LANES + 1]]
    assert len(b._lanes.all) == MAX_LANES
    assert handles[0].call is None and handles[1].call is not None  # the oldest was collected
    assert [len(h.result().log10) for h in handles] == [p.n_pairs for p in
                                                        regions[:MAX_LANES + 1]]
    assert all(x.busy is None for x in b._lanes.all)
    b.close()
    assert len(b._lanes.all) == 1


def _spent(drv, b, pairs) -> tuple:
    """(driver calls by kind, launches, uploaded bytes, Execution) of a repeated call."""
    b.run(pairs)
    before, n_launch, n_up = Counter(drv.calls), len(drv.launches), len(drv.uploads)
    ex = b.run(pairs)
    return drv.calls - before, drv.launches[n_launch:], drv.uploads[n_up:], ex


def test_a_small_call_issues_few_driver_calls(fake_cuda):
    """One stream, five events, one layout launch, one copy back (per-region calls: the host
    issuing driver calls bounds a per-region call); fails if events or waits come back."""
    b = swv.backends()[0]
    for p in launches(resolve("shape-100x150@2000").load(), "original")[:12]:
        spent, _, _, ex = _spent(fake_cuda, b, p)
        bins = b.bins_for(p)
        _, queue_of, cascade = b.queue_plan(bins)
        fed = {queue_of[i] for i, x in enumerate(bins) if x.label in ex.info["bins"]}
        # a fed queue: its double kernel; a cascade (reads up to 256): two kernels, the float32
        # one with exponents, then the double one over what those could not hold
        rescue = sum(1 + cascade[q] for q in fed)
        assert all(cascade) and rescue == 2 * len(fed)
        assert spent["launch"] == 1 + len(ex.info["bins"]) + rescue
        assert dict(spent - Counter(launch=spent["launch"])) == {
            "record": 5, "h2d": 1, "d2h": 1, "sync": 1, "time_since": 4}
        # in stream order: start, upload, its end, layout + bins, their end, recompute, its
        # end, copy back, its end; then the wait and the four time queries
        order = fake_cuda.calls.order[-(sum(spent.values())):]
        assert order == ["record", "h2d", "record", *["launch"] * (1 + len(ex.info["bins"])),
                         "record", *["launch"] * rescue, "record", "d2h", "record", "sync",
                         *["time_since"] * 4]
        # the stages tile the call's span on its one stream
        t = ex.timing
        assert 0 < t["h2d"] and 0 < t["kernel"] and 0 < t["d2h"]
        assert t["h2d"] + t["kernel"] + t["d2h"] == pytest.approx(ex.info["gpu_span_s"])
        assert 0 < ex.info["float32_kernel_s"] < t["kernel"] == ex.info["kernel_span_s"]


def test_a_small_call_of_many_pairs_runs_its_bins_side_by_side(fake_cuda):
    """From SIDE_BINS_FROM pairs (10s: 3,550 pairs in a p32k4 and a p32k8 bin) the bins after
    the layout run on streams of their own, the longest reads' bin launched first, joined on
    the main stream before the recompute, whose queues after the first run on side streams
    too (``chain_queues`` 0; by default each queue follows its bin: the next test);
    -nostreams and smaller calls keep one stream."""
    from hmmbench.pairhmm.subwarp.small import SIDE_BINS_FROM
    ps = _two_bins()
    assert ps.n_pairs >= SIDE_BINS_FROM
    by = {x.name: x for x in swv.backends()}
    by["cuda-subwarp"].chain_queues = 0
    for name, n_streams in (("cuda-subwarp", 2), ("cuda-subwarp-nostreams", 1)):
        b = by[name]
        spent, launched, _, ex = _spent(fake_cuda, b, ps)
        assert ex.info["bin_streams"] == n_streams and len(ex.info["bins"]) == 2
        assert 0 < ex.info["float32_kernel_s"] < ex.info["kernel_span_s"]
        streams = fake_cuda.launch_streams[-len(launched):]
        bins = [(name[0], s) for (name, *_), s in zip(launched, streams)]
        floats = [(n, s) for n, s in bins if n == "subwarp_forward"][:2]
        assert launched[0][0][0] == "sw_layout_small"
        if n_streams == 2:
            # the p32k8 bin (reads over 128) first, on a side stream; the main stream joins
            (_, first), (_, second) = floats
            assert first is not second and second is streams[0]
            # two fed cascades (reads up to 128, and over): the second's two kernels on a side
            # stream, after the bins' end, joined before the copy back
            rescue = [s for (n, *_), s in zip(launched, streams) if n[0] == "subwarp_forward"][2:]
            assert len(rescue) == 4 and rescue[0] is rescue[1] is not streams[0]
            assert rescue[2] is rescue[3] is streams[0]
            assert dict(spent)["wait"] == 2 + 2 and dict(spent)["record"] == 7 + 1
            # its items' bound: every item of the call (the kernel reads its exact range)
            assert [a for a in launched[1][4] if isinstance(a, np.int32)][0] == ps.n_pairs
        else:
            assert len({id(s) for s in streams}) == 1 and "wait" not in spent
        assert dict(spent)["time_since"] == 4
    small = launches(resolve("1m").load(), "original")[3]
    assert small.n_pairs < SIDE_BINS_FROM
    _, _, _, ex = _spent(fake_cuda, by["cuda-subwarp"], small)
    assert ex.info["bin_streams"] == 1


def _two_bins() -> PairSet:
    """3,064 pairs in two bins (reads of 100 and of 200 bases), each feeding a cascade of its
    own."""
    return PairSet.concatenate([resolve("shape-100x150@3000").load(),
                                resolve("shape-200x250@64").load()])


def test_a_small_call_chains_each_queue_after_its_one_bin(fake_cuda):
    """Side by side, a recompute queue fed by one bin is launched on that bin's stream right
    after it (``chain_queues``): the queue of the bin that ends first runs while the other
    bin still does. The chain of the longest reads is launched first, on a side stream; no
    event between the bins and the recompute (two records and two waits fewer); the results
    are those of the unchained call."""
    ps = _two_bins()
    b = swv.backends()[0]
    assert b.chain_queues == 1
    spent, launched, _, ex = _spent(fake_cuda, b, ps)
    streams = fake_cuda.launch_streams[-len(launched):]
    kernels = [(name[0], s) for (name, *_), s in zip(launched, streams)]
    assert kernels[0][0] == "sw_layout_small" and kernels[0][1] is streams[0]
    forward = [s for n, s in kernels if n == "subwarp_forward"]
    # (bin, its cascade's two kernels) on a side stream, then the same on the main stream
    assert len(forward) == 6
    assert forward[0] is forward[1] is forward[2] is not streams[0]
    assert forward[3] is forward[4] is forward[5] is streams[0]
    # each chain: a bin (float32), its queue's float32 kernel with exponents, its float64
    # one, all three over the bin's reads (the longest first)
    defs = [dict(name[1][1]) for name, *_ in launched[1:]]
    kinds = [(d.get("SW_EXP_SCALE", 0), d.get("SW_DOUBLE", 0)) for d in defs]
    assert kinds == [(0, 0), (1, 0), (0, 1)] * 2
    assert [d["SW_BIN_MAX"] for d in defs] == [256] * 3 + [128] * 3
    assert dict(spent)["wait"] == 2 and dict(spent)["record"] == 6
    assert "float32_kernel_s" not in ex.info and ex.info["kernel_span_s"] == ex.timing["kernel"]
    assert dict(spent)["time_since"] == 3
    b.chain_queues = 0
    _, _, _, unchained = _spent(fake_cuda, b, ps)
    np.testing.assert_array_equal(ex.log10, unchained.log10)


def test_the_tables_register_caps_leave_each_bins_occupancy_as_its_min_blocks_set_it():
    """A cap (__maxnreg__) replaces the launch bounds: by the occupancy rules
    (``glue.resident_blocks``) it must leave each bin the resident blocks its min blocks set (2
    where none), or the bin would lose warps; only float32 kernels take it."""
    from hmmbench import registry
    b = swv.backends()[0]
    capped = [x for x in sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 1024) if x.max_regs]
    assert len(capped) >= 6
    for x in capped:
        assert x.max_regs > 128, x.label
        assert glue.resident_blocks(FAKE_H100, x.max_regs, 128, 0) == max(x.min_blocks, 2), \
            x.label
        assert b.defines(x)["SW_MAXNREG"] == x.max_regs
        assert "SW_MAXNREG" not in b.defines(x, sw.EXP) and "SW_MAXNREG" not in b.defines(
            x, sw.DOUBLE)
    (regcap,) = registry.select(["cuda-subwarp-regcap[hi=896,max_regs=208]"])
    (x,) = [x for x in sw.make_bins(regcap._bins_table, sw.DEFAULT_LONG, 896) if x.hi == 896]
    assert x.max_regs == 208 and regcap.defines(x)["SW_MAXNREG"] == 208


def test_the_low_floor_is_defined_for_the_cascading_float32_kernels_without_exponents():
    """SW_F32_LOW_FLOOR (f32_floors) where a cascade's float32 level with exponents takes what it
    leaves: cuda-subwarp's bins without exponents of reads over 256; not its exponent bins, not the recompute
    kernels, not the backends whose queues go straight to float64 (-f64rescue), not when every
    pair is sent to the recompute."""
    by = {x.name: x for x in swv.backends()}
    b, rescue = by["cuda-subwarp"], by["cuda-subwarp-f64rescue"]
    bins = sw.make_bins(b._bins_table, b._long, 2000)
    plain = [x for x in bins if not b.exponents(x)]
    assert plain and len(plain) < len(bins)
    floored = [x for x in plain if x.hi > sw.F32_LOW_FLOOR_ABOVE]   # reads over 256
    assert floored and len(floored) < len(plain)
    for x in bins:
        d = b.defines(x)
        assert ("SW_F32_LOW_FLOOR" in d) == (x in floored), x.label
        assert "SW_F32_LOW_FLOOR" not in b.defines(x, sw.EXP)
        assert "SW_F32_LOW_FLOOR" not in b.defines(x, sw.DOUBLE)
        assert "SW_F32_LOW_FLOOR" not in rescue.defines(x)
    d = b.defines(floored[0])
    assert (d["SW_F32_LOW_FLOOR"], d["SW_F32_LOW_FLOOR_IQ"], d["SW_F32_LOW_FLOOR_ABOVE"]) == \
        ("1e-33f", 50, 256)
    b.recompute_all = True
    try:
        assert "SW_F32_LOW_FLOOR" not in b.defines(floored[0])
    finally:
        b.recompute_all = False


def test_exp_every_sets_the_check_interval_of_the_bins_with_exponents():
    """The A/B knob exp_every: SW_EXP_EVERY (unrolled iterations of 4 steps) in the float32
    bins with exponents only; 16 steps is the kernel's default; past 28 the emulation sends
    pairs to float64, so it is refused."""
    b = swv.backends()[0]
    b.exp_bin_settings = 0  # (the bins' own, EXP_BIN_SETTINGS, are test_cuda_subwarp's)
    bins = sw.make_bins(b._bins_table, b._long, 2000)
    exp, plain = ([x for x in bins if b.exponents(x) == e] for e in (True, False))
    assert exp and plain
    assert all("SW_EXP_EVERY" not in b.defines(x) for x in bins)
    b.exp_every = 24
    try:
        assert all(b.defines(x)["SW_EXP_EVERY"] == 6 for x in exp)
        assert all("SW_EXP_EVERY" not in b.defines(x) for x in plain)
        assert "SW_EXP_EVERY" not in b.defines(exp[0], sw.EXP)
        b.exp_every = 32
        with pytest.raises(ValueError, match="exp_every"):
            b.defines(exp[0])
    finally:
        b.exp_every = 16


def test_recompute_counts_take_float64_pairs_from_each_queues_last_level():
    """Queue heads {first, count}: per chunk the n_bins queues, then their second level. A
    cascade's first level counts float32 recomputes with exponents, its second float64 ones; a
    plain queue's first level counts float64 ones."""
    from hmmbench.pairhmm.subwarp.rescue import recompute_counts
    nb = 3
    heads = np.zeros((2, 2, nb, 2), np.int32)   # two chunks
    heads[..., 0] = 99                          # first slots: not counts
    heads[0, 0, :, 1] = [5, 7, 0]               # chunk 0, first level of queues 0, 1, (2)
    heads[0, 1, :, 1] = [2, 0, 0]               # its second level: queue 0 handed on 2
    heads[1, 0, :, 1] = [1, 3, 0]
    heads[1, 1, :, 1] = [1, 0, 0]
    assert recompute_counts(heads.ravel(), nb, (True, False)) == (3 + 10, 6)
    assert recompute_counts(heads.ravel(), nb, (False, False)) == (16, 0)
    assert recompute_counts(heads[:1].ravel(), nb, (True, True)) == (2, 12)


def test_queues_of_bins_without_exponents_are_cascades():
    """cuda-subwarp: its bins of reads up to 512 have no exponents, so their queues recompute in
    float32 with exponents first; the queue of longer reads (exponent bins, multi-tile) stays a
    double kernel. Not in -exp-all, -exp-long, -f64rescue, or when every pair is sent to
    float64."""
    by = {x.name: x for x in swv.backends()}
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 2000)
    queue_bins, queue_of, cascade = by["cuda-subwarp"].queue_plan(bins)
    for q, c in zip(queue_bins, cascade):
        fed = [b for i, b in enumerate(bins) if queue_of[i] == queue_bins.index(q)]
        assert c == (max(b.hi for b in fed) <= 512), (q.label, c)
    assert any(cascade) and not all(cascade)
    for name in ("cuda-subwarp-exp-all", "cuda-subwarp-exp-long", "cuda-subwarp-f64rescue"):
        assert not any(by[name].queue_plan(bins)[2]), name
    b = by["cuda-subwarp"]
    d = b.defines(queue_bins[0], sw.EXP)
    assert d["SW_EXP_SCALE"] == 1 and d["SW_DOUBLE"] == 0 and d["SW_MIN_BLOCKS"] == 1
    assert b.defines(bins[0])["SW_EXP_SCALE"] == 0 and b.defines(bins[-1])["SW_EXP_SCALE"] == 1
    b.recompute_all = True
    assert not any(b.queue_plan(bins)[2])


def test_bins_without_exponents_up_to_512_cascade_through_one_p32k16_tile():
    """Bins of 257..512 reads without exponents (cuda-subwarp's, exponents over 512; and
    cuda-subwarp-exp-above[exp_above=448], [640] up to 512) feed a queue of their own: its
    float64 level is the multi-tile p32k8 kernel, its float32 level with exponents one p32 x 16
    tile (``exp_config``). Bins with exponents, or whose reads that tile cannot hold, keep a
    plain double queue; with exponents over 256 one multi-tile queue is left."""
    from hmmbench import registry
    from hmmbench.pairhmm.subwarp.rescue import EXP_TILE, exp_config, plan_kernels
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 2000)
    for name, top in (("cuda-subwarp", 512), ("cuda-subwarp-exp-above[exp_above=448]", 448),
                      ("cuda-subwarp-exp-above[exp_above=640]", 512)):
        (b,) = registry.select([name])
        queue_bins, queue_of, cascade = b.queue_plan(bins)
        multi = [j for j, q in enumerate(queue_bins) if q.multi_tile]
        c, d = (queue_bins[j] for j in multi)
        assert [cascade[j] for j in multi] == [True, False]
        assert (c.lo, c.hi, c.p, c.k) == (257, top, 32, sw.DOUBLE_K) and d.lo == top + 1
        e = exp_config(c)
        assert (e.lo, e.hi, e.p, e.k, e.multi_tile) == (257, top, 32, 16, False)
        kernels = plan_kernels(bins, queue_bins, cascade)
        assert (e, sw.EXP) in kernels and (c, sw.DOUBLE) in kernels and (c, sw.EXP) not in kernels
        for i, x in enumerate(bins):
            assert cascade[queue_of[i]] == (not b.exponents(x) and x.hi <= EXP_TILE), x.label
    (b,) = registry.select(["cuda-subwarp-exp-above[exp_above=256]"])
    queue_bins, _, cascade = b.queue_plan(bins)
    assert [q.multi_tile for q in queue_bins].count(True) == 1 and not cascade[-1]


@pytest.fixture(scope="module")
def fixed_shapes():
    """Generated sets by (longest read, pairs), each made once for every backend that asks:
    16 pairs of reads of ``longest`` bases, the rest of 8 (the bins depend on the pairs and the
    longest read alone, ``choose_bins``)."""
    from hmmbench.pairhmm.datasets.synthetic import generate_fixed
    made: dict = {}

    def get(longest: int, n_pairs: int) -> PairSet:
        if (longest, n_pairs) not in made:
            long = generate_fixed(longest, 8, min(n_pairs, 16), seed=1)
            ps = long if n_pairs <= 16 else PairSet.concatenate(
                [long, generate_fixed(8, 8, n_pairs - 16, seed=1)])
            assert ps.n_pairs == n_pairs and ps.max_read_length == longest
            made[longest, n_pairs] = ps
        return made[longest, n_pairs]
    return get


@pytest.mark.parametrize("name", ["cuda-subwarp", "cuda-subwarp-exp-above[exp_above=448]",
                                  "cuda-subwarp-batched"])
def test_every_bin_has_exponents_or_a_float32_cascade_for_any_input(name, fixed_shapes):
    """No float64 recompute but for pairs the exponents cannot hold: whatever the input's size
    (its tier of bins) and longest read, each float32 bin either carries the exponents or feeds
    a cascade (reads of 257..400 in a size tier's multi-tile bin once went to float64 alone).
    Not so with exponents over 640: one tile cannot hold 513..640, so those bins' queue is a
    float64 one -- the trade that variant shows."""
    from hmmbench import registry
    (b,) = registry.select([name])
    for n_pairs in (16, 9000, 40000):
        for longest in (100, 300, 400, 512, 600, 1100):
            bins = b.bins_for(fixed_shapes(longest, n_pairs))
            _, queue_of, cascade = b.queue_plan(bins)
            for i, x in enumerate(bins):
                assert b.exponents(x) or cascade[queue_of[i]], (n_pairs, longest, x.label)


@pytest.mark.parametrize("path", ["small", "full"])
def test_a_multi_tile_queues_cascade_runs_one_tile_then_its_multi_tile_double_level(
        fake_cuda, path):
    """Reads of 300..448 in bins without exponents (exp_above=448): their queue's float32 level
    with exponents is one p32k16 tile (no scratch), and the double kernel after it, over the
    second level, is the multi-tile p32k8 one with its scratch -- a buffer of its own, apart
    from any other multi-tile queue's."""
    # (without the size tiers, which run a few pairs' reads over 256 in the multi-tile bin)
    b = sw.SubwarpBackend("exp-above-448", exp_scale=True, exp_above=448, exp_recompute=True)
    if path == "full":
        b.small_below = 0
    pairs = deep_pairs(3, 96, length=(300, 500))  # 449..499: a bin with exponents
    _, launched, _, ex = _spent(fake_cuda, b, pairs)
    sub = [(dict(name[1][1]), args) for name, _, _, _, args in launched
           if name[0] == "subwarp_forward"]
    exp_i = [i for i, (d, _) in enumerate(sub) if d["SW_EXP_SCALE"] and not d["SW_DOUBLE"]
             and d["SW_BIN_MIN"] == 257]
    assert len(exp_i) == 1
    (d, exp_args), (dd, dbl_args) = sub[exp_i[0]], sub[exp_i[0] + 1]
    assert (d["SW_P"], d["SW_K"], d["SW_MULTI_TILE"], d["SW_BIN_MAX"]) == (32, 16, 0, 448)
    assert int(exp_args[14]) == 0
    assert (dd["SW_DOUBLE"], dd["SW_P"], dd["SW_K"], dd["SW_MULTI_TILE"]) == (1, 32, 8, 1)
    assert dbl_args[0] == exp_args[13] and dbl_args[1] == exp_args[12]
    scratch = {int(args[14]) for d, args in sub if d["SW_DOUBLE"] and d["SW_MULTI_TILE"]}
    assert len(scratch) == 2 and 0 not in scratch   # two multi-tile queues, two buffers
    assert ex.n_fallback == 0 and ex.info["exp_recomputed"] == 0
    b.close()


def test_a_cascades_kernels_read_and_fill_the_right_queue_levels(fake_cuda):
    """A small call with one fed cascade: the float32 kernel with exponents reads the queue
    (items, head) and hands its failures to the second level (head 8 x n_bins further, the
    second item buffer), which the double kernel then reads."""
    region = launches(resolve("shape-100x150@2000").load(), "original")[0]
    b = swv.backends()[0]
    _, launched, _, ex = _spent(fake_cuda, b, region)
    nb = len(b.bins_for(region))
    names = [dict(name[1][1])["SW_DOUBLE"] if name[0] == "subwarp_forward" else None
             for name, *_ in launched]
    exp_i = [i for i, (name, *_) in enumerate(launched) if name[0] == "subwarp_forward"
             and dict(name[1][1]).get("SW_EXP_SCALE") == 1]
    assert len(exp_i) == 1 and names[exp_i[0] + 1] == 1   # the double kernel right after it
    exp_args, dbl_args = launched[exp_i[0]][4], launched[exp_i[0] + 1][4]
    bin_args = launched[1][4]   # the bin's float32 kernel: its queue head and items
    queue_head, fb_items = bin_args[12], bin_args[13]
    assert exp_args[0] == fb_items and exp_args[1] == queue_head
    assert exp_args[12] == queue_head + 8 * nb and exp_args[13] != fb_items
    assert dbl_args[0] == exp_args[13] and dbl_args[1] == exp_args[12]
    assert ex.n_fallback == 0 and ex.info["exp_recomputed"] == 0
    assert ex.info["recompute_queues"] == [q + " f32-exp" for q in
                                           [x.label for x in b.queue_plan(b.bins_for(region))[0]]]


def test_a_small_call_stages_and_launches_as_the_full_path(fake_cuda):
    """The same bytes uploaded and the same bin and recompute kernels (grid, block, shared
    bytes, sizes) as the full path; only the layout launches and the waits and events go."""
    region = launches(resolve("1m").load(), "original")[3]
    small, full = swv.backends()[0], swv.backends()[0]
    full.small_below = 0
    s_calls, s_launch, s_up, s_ex = _spent(fake_cuda, small, region)
    f_calls, f_launch, f_up, f_ex = _spent(fake_cuda, full, region)
    assert s_up == f_up and len(s_up) == 1

    def bins(launched):
        return [(name, grid, block, smem, [int(a) for a in args if isinstance(a, np.int32)])
                for name, grid, block, smem, args in launched
                if name[0] == "subwarp_forward"]
    assert bins(s_launch) == bins(f_launch) and bins(s_launch)
    assert [n[0] for n, *_ in s_launch if n[0] != "subwarp_forward"] == ["sw_layout_small"]
    assert [n[0] for n, *_ in f_launch if n[0] != "subwarp_forward"] == [
        "sw_gate", "sw_layout_count", "sw_layout_scan", "sw_layout_scatter"]
    assert s_ex.info["bins"] == f_ex.info["bins"] and s_ex.n_fallback == f_ex.n_fallback
    assert sum(s_calls.values()) * 2 < sum(f_calls.values())


def test_a_small_call_of_many_items_lays_out_as_the_full_path(fake_cuda):
    """1m merged (29,307 pairs, one item each) on the small path: from MANY_ITEMS items
    its layout is the full path's memset and count, scan and scatter launches (grids and
    arguments alike) instead of one block; the same bytes up, the same bins and recompute
    launches, and at most half the full path's events, waits and time queries."""
    from hmmbench.pairhmm.subwarp.small import MANY_ITEMS
    pairs = launches(resolve("1m").load(), "merged")[0]
    b = swv.backends()[0]   # one backend, one lane: the same device buffers on both paths
    assert MANY_ITEMS <= pairs.n_pairs < b.small_below
    # one upload from the staged slot (the sequences from the PairSet's arrays:
    # test_a_large_small_call_uploads_its_sequences_from_the_pairsets_arrays)
    b.pageable_from_bytes = 1 << 40
    s_calls, s_launch, s_up, s_ex = _spent(fake_cuda, b, pairs)
    b.small_below = 0
    f_calls, f_launch, f_up, f_ex = _spent(fake_cuda, b, pairs)
    assert s_up == f_up and len(s_up) == 1

    def norm(launched, kernel=None):
        return sorted((name[0], name[1], grid, block, smem, [int(a) for a in args])
                      for name, grid, block, smem, args in launched
                      if kernel is None or name[0] == kernel)
    layout = ["sw_layout_count", "sw_layout_scan", "sw_layout_scatter"]
    assert [n[0] for n, *_ in s_launch][:3] == layout
    for k in layout:   # (but the queue heads: a small call's lie before its results)
        cut = -1 if k == "sw_layout_scan" else None
        assert [x[:5] + (x[5][:cut],) for x in norm(s_launch, k)] == \
            [x[:5] + (x[5][:cut],) for x in norm(f_launch, k)]
    # the same bin kernels, block and shared bytes; the small call's grids from its items,
    # capped at the resident blocks (test_a_small_calls_bin_grids_need_no_count)
    assert [x[:2] + x[3:5] for x in norm(s_launch, "subwarp_forward")] == \
        [x[:2] + x[3:5] for x in norm(f_launch, "subwarp_forward")]
    # (the full path also holds its chunk's layout in sw_gate until the chunk is enqueued)
    assert s_calls["memset"] == f_calls["memset"] == 1
    assert s_calls["launch"] + 1 == f_calls["launch"]
    for what in ("record", "wait", "time_since"):
        assert 2 * s_calls[what] <= f_calls[what], what
    assert s_ex.info["bins"] == f_ex.info["bins"] and s_ex.n_fallback == f_ex.n_fallback


def test_resident_blocks_follow_the_occupancy_rules():
    """An H100 SM holds 2 / 3 / 4 / 6 blocks of 128 threads at 255 / 168 / 128 / 80 registers
    (the register caps in docs/subwarp-design.md), 16 at 32 registers (2,048 threads), 2 with
    100 KB of shared memory each, 0 when one block's shared memory does not fit."""
    rb = glue.resident_blocks
    assert [rb(FAKE_H100, r, 128, 0) for r in (255, 168, 128, 80, 32)] == [2, 3, 4, 6, 16]
    assert rb(FAKE_H100, 32, 128, 100 * 1024) == 2 and rb(FAKE_H100, 32, 128, 240_000) == 0
    assert rb(FAKE_H100, 32, 1024, 0) == 2 and rb(FAKE_H100, 64, 32, 0) == 32


@pytest.mark.parametrize("name", ["1m-merged", "10s", "region"])
def test_a_small_calls_bin_grids_need_no_count(fake_cuda, monkeypatch, name):
    """A small call launches every bin with reads up to its longest with all its work items as
    the bound (the kernels' n_max) and a grid of the fewer of those items' blocks and the
    blocks the GPU holds at once; it counts the items per bin (info's bins, the full path's
    counts) only after its last driver call but the wait."""
    from hmmbench.pairhmm.subwarp import small as subwarp_small
    pairs = {"1m-merged": lambda: launches(resolve("1m").load(), "merged")[0],
             "10s": lambda: resolve("shape-100x150@3000").load(),
             "region": lambda: launches(resolve("1m").load(), "original")[3]}[name]()
    b = swv.backends()[0]
    at: list = []

    def spy(*args, _f=subwarp_small.items_per_bin):
        at.append(len(fake_cuda.calls.order))
        return _f(*args)
    monkeypatch.setattr(subwarp_small, "items_per_bin", spy)
    spent, launched, up, ex = _spent(fake_cuda, b, pairs)
    assert at[-1] == len(fake_cuda.calls.order) - spent["time_since"] - 1   # before the sync
    plan = b._plan(pairs, pairs.max_read_length)
    units = pairs.n_pairs   # one item per pair below per_pair_below
    assert units <= b.per_pair_below
    want = [(min(-(-units // (128 // x.p)), b.resident_grid(x)), units)
            for x in plan.bins if x.lo <= pairs.max_read_length]
    bins = [x for x in launched if x[0][0] == "subwarp_forward"][:len(want)]
    assert sorted((grid[0], int(args[2])) for _, grid, _, _, args in bins) == sorted(want)
    capped = [grid for (grid, _), x in zip(want, plan.bins) if grid < -(-units // (128 // x.p))]
    assert capped if name != "region" else not capped   # a region's ~270 items do not fill it
    b.small_below = 0   # the full path: grids from its counts
    _, _, _, full = _spent(fake_cuda, b, pairs)
    assert ex.info["bins"] == full.info["bins"] and sum(ex.info["bins"].values()) == units


def test_each_chunks_results_come_back_after_its_kernels_into_their_place(fake_cuda, monkeypatch):
    """A chunked call copies each chunk's output range back on its own (after that chunk's
    kernels, on the stream that joins them) and finish puts every range where it belongs: the
    fake copy writes each result's own index, so the call returns 0, 1, 2, ... only if the
    ranges are the chunks', contiguous and moved to the right places."""
    ps = resolve("shape-100x150@3000").load()
    copies: list = []

    def d2h(dst, src, stream):
        fake_cuda.calls["d2h"] += 1
        if dst.dtype == np.float64:
            base = copies[0][0] if copies else int(src)
            copies.append((int(src), len(dst), stream))
            dst[:] = (int(src) - base) // 8 + np.arange(len(dst))
    monkeypatch.setattr(fake_cuda, "memcpy_dtoh_async", d2h)
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    b.chunk_pairs = 1000
    ex = b.run(ps)
    bp = ps.batch_pairs
    sizes = [int(bp[b1] - bp[b0]) for b0, b1 in b.chunk_bounds(ps)]
    assert len(sizes) > 2 and [n for _, n, _ in copies] == sizes
    assert [src - copies[0][0] for src, _, _ in copies] == [8 * x for x in np.cumsum([0] + sizes[:-1])]
    assert len({id(s) for _, _, s in copies}) == 1
    assert np.array_equal(ex.log10, np.arange(ps.n_pairs))


def test_the_full_path_issues_the_driver_calls_it_did_before_the_small_path(fake_cuda):
    """Chunked calls and one chunk over ``small_below`` pairs: the driver calls of the tree
    before the small path (pinned; git show 8903acf:scripts/subwarp_driver_record.py checks every argument),
    and per chunk its results' copy back, its event, that event's time query
    and the wait for it (the whole output's copy after the last chunk went), and the first
    chunk's upload part by part, and per chunk its gate's launch (sw_gate) and
    from the second chunk the query whether the chunk before is done (the fake: it is)."""
    chunked_set, whole = resolve("shape-100x150@3000").load(), resolve("1m").load()
    for name, cascades in (("cuda-subwarp-exp-all", 0), ("cuda-subwarp", 1)):
        # -exp-all: exponents in every bin, each queue one double kernel; cuda-subwarp: per fed
        # cascade and chunk one more launch (the float32 recompute with exponents before the
        # double one) with its two events and their time queries (3 chunks of one fed queue;
        # 1m: one chunk, three fed queues)
        by = {x.name: x for x in swv.backends()}
        chunked = by[name]
        chunked.chunk_pairs = 1000
        spent, *_ = _spent(fake_cuda, chunked, chunked_set)
        more = 3 * cascades
        extra = STREAMED_COPIES - 1  # chunk 0's copies past one: two events and queries each
        assert dict(spent) == {"d2h": 1 + 3, "h2d": 3 + extra, "launch": 15 + 3 + more,
                               "memset": 3, "record": 30 + 3 + 2 * extra + 2 * more,
                               "sync": 1 + 3, "time_since": 29 + 3 + 2 * extra + 2 * more,
                               "wait": 20, "query": 2}
        one = {x.name: x for x in swv.backends()}[name]
        one.small_below = 0   # 1m merged: the small path's
        spent, *_ = _spent(fake_cuda, one, whole)
        assert dict(spent) == {"d2h": 2, "h2d": 1, "launch": 9 + 1 + more, "memset": 1,
                               "record": 21 + 2 * more, "sync": 2,
                               "time_since": 20 + 2 * more, "wait": 16}


def test_a_chunked_call_stages_chunk_0_alone_before_the_others(fake_cuda, monkeypatch):
    """What the GPU waits for first, chunk 0, is staged with no other chunk's task beside it
    (every thread and the memory bandwidth on it); every chunk's tasks run once each."""
    import threading
    from hmmbench.pairhmm.subwarp.call import SubwarpCall
    seen, lock = [], threading.Lock()

    def logged(method):
        def run(self, c, *args):
            with lock:
                seen.append(("start", c))
            out = method(self, c, *args)
            with lock:
                seen.append(("end", c))
            return out
        return run
    monkeypatch.setattr(SubwarpCall, "_stage_part", logged(SubwarpCall._stage_part))
    monkeypatch.setattr(SubwarpCall, "_bin_estimate", logged(SubwarpCall._bin_estimate))
    rows = logged(lambda self, c, k, n, stage=SubwarpCall._stage_rows: stage(self, k, n))
    monkeypatch.setattr(SubwarpCall, "_stage_rows", lambda self, k, n: rows(self, 0, k, n))
    b = sw.SubwarpBackend("t", chunk_pairs=300)
    b.prep_threads = 3
    ps = resolve("shape-100x150@3000").load()
    n_chunks = len(b.chunk_bounds(ps))
    assert n_chunks > 6  # more chunks than the 5 slots
    for _ in range(3):
        seen.clear()
        b.run(ps)
        # the bin estimate and the parts; chunk 0 streamed: the integers, and its sequence
        # arrays by the 3 staging threads, each a piece of every array
        assert Counter(seen) == {(what, c): 1 + CHUNK_PARTS if c else 2 + 3
                                 for what in ("start", "end") for c in range(n_chunks)}
        last_of_0 = max(i for i, (what, c) in enumerate(seen) if c == 0)
        first_other = min(i for i, (what, c) in enumerate(seen) if c > 0)
        assert last_of_0 < first_other


def _behind_unused(ps: PairSet) -> PairSet:
    """``ps`` behind an unused read and haplotype: its first read, haplotype and bytes are not
    0 (the staging's subtractions)."""
    def ahead(a, n):
        return np.concatenate([np.full(n, 7, np.uint8), a])
    return PairSet(read_bases=ahead(ps.read_bases, 3), base_qual=ahead(ps.base_qual, 3),
                   ins_qual=ahead(ps.ins_qual, 3), del_qual=ahead(ps.del_qual, 3),
                   gcp_qual=ahead(ps.gcp_qual, 3),
                   read_offsets=np.concatenate([[0], ps.read_offsets + 3]),
                   hap_bases=ahead(ps.hap_bases, 2),
                   hap_offsets=np.concatenate([[0], ps.hap_offsets + 2]),
                   batch_reads=ps.batch_reads + 1, batch_haps=ps.batch_haps + 1)


@pytest.mark.parametrize("shifted", [False, True])
def test_a_small_calls_staging_is_the_general_stagings_byte_for_byte(shifted):
    """``whole_offsets`` + ``stage_whole`` (the small call's) against ``staging_offsets`` +
    ``chunk_sources`` + ``stage`` (the full path's) for the one chunk: the same offsets, slot
    size and end, and every byte of the buffer alike (the gaps between arrays untouched)."""
    sets = [ragged_pairs(seed=s, batches=n, max_read=300, max_hap=400)
            for s, n in ((31, 12), (32, 1), (33, 40))]
    sets += launches(resolve("shape-100x150@2000").load(), "original")[:3]
    for ps in sets:
        ps = _behind_unused(ps) if shifted else ps
        for meta in (np.arange(5, dtype=np.int32) + 100, np.arange(70, dtype=np.int32)):
            offs, size = staging_offsets(ps, [(0, ps.n_batches)], len(meta))
            general = np.full(size + 1000, 0xEE, np.uint8)
            used = stage(chunk_sources(ps, 0, ps.n_batches, meta), [n for n, _ in STAGED],
                         offs, general)
            w_offs, w_size, ends = whole_offsets(ps, len(meta))
            assert w_offs == [o for o, _ in offs.values()] and w_size == size
            assert (min(ends) > 0) == shifted
            for spare in (0, 3, 5):  # a buffer whose length is no multiple of 8 or 4
                whole = np.full(size + 1000 + spare, 0xEE, np.uint8)
                assert stage_whole(ps, meta, w_offs, ends, int_views(whole)) == used
                assert whole[:size + 1000].tobytes() == general.tobytes()


@pytest.mark.parametrize("shifted", [False, True])
def test_a_full_calls_chunk_staging_is_the_general_stagings_byte_for_byte(shifted):
    """``chunk_offsets`` + ``stage_chunk_part`` (the full path's, every chunk of multi-chunk
    PairSets: chunk bases 0 and not, per-pair and per-read chunk sizes, the ramp) against
    ``staging_offsets`` + ``chunk_sources`` + ``stage``: the same offsets and slot size, each
    part writing its ``STAGE_TASKS`` arrays' bytes alone, and every byte of the buffer alike
    (the gaps between arrays and a previous chunk's longer arrays untouched)."""
    sets = [(ragged_pairs(seed=s, batches=n, max_read=300, max_hap=400), k)
            for s, n, k in ((34, 30, 40), (35, 60, 7), (36, 12, 1))]
    sets.append((resolve("shape-100x150@2000").load(), 300))
    for ps, chunk in sets:
        ps = _behind_unused(ps) if shifted else ps
        for ramp in (0, 3):
            bounds = sw.chunk_bounds(ps, chunk, ramp)
            assert len(bounds) > 2
            meta = np.arange(70, dtype=np.int32) + 3
            # each chunk packed by its own sizes; the slot fits the largest
            layouts = [staging_offsets(ps, [bound], len(meta)) for bound in bounds]
            size = max(sz for _, sz in layouts)
            n_offs, n_size, ends = chunk_offsets(ps, bounds, len(meta))
            assert n_offs == [[o for o, _ in offs.values()] for offs, _ in layouts]
            assert n_size == size
            general = np.full(size + 1000, 0xEE, np.uint8)
            new = np.full(size + 1003, 0xEE, np.uint8)  # no multiple of 8: views cut it
            views = int_views(new)
            for c, ((b0, b1), end) in enumerate(zip(bounds, ends)):
                src = chunk_sources(ps, b0, b1, meta)
                offs, c_offs = layouts[c][0], n_offs[c]
                used = 0
                for part, names in zip(range(CHUNK_PARTS), STAGE_TASKS):
                    alone = np.full(size, 0xEE, np.uint8)
                    stage_chunk_part(ps, meta, c_offs, end, int_views(alone), b0, b1, part)
                    ref = np.full(size, 0xEE, np.uint8)
                    last = stage(src, names, offs, ref)
                    assert alone.tobytes() == ref.tobytes(), (part, names)
                    used = max(used, stage_chunk_part(ps, meta, c_offs, end, views, b0, b1, part))
                    stage(src, names, offs, general)
                # meta's end: the upload's size, the chunk's own
                assert used == last and used <= layouts[c][1]
                assert new[:size + 1000].tobytes() == general.tobytes()
            assert sum(min(end) > 0 for end in ends) >= len(ends) - 1 + shifted  # bases not 0


def test_a_streamed_chunks_copies_cover_every_byte_its_parts_stage():
    """The first chunk's upload part by part (``part_ranges``): every byte a staging task
    writes -- whole or in pieces -- lies in its part's ranges, and the ranges of the parts
    do not overlap, so the device slot gets what the single copy of the whole slot gave it."""
    for ps in (_behind_unused(ragged_pairs(seed=39, batches=30, max_read=300, max_hap=400)),
               resolve("shape-100x150@2000").load()):
        bounds = sw.chunk_bounds(ps, 40, False)
        meta = np.arange(11, dtype=np.int32)
        offs, size, ends = chunk_offsets(ps, bounds, len(meta))
        for c, (b0, b1) in enumerate(bounds[:4]):
            whole = np.full(size, 0xEE, np.uint8)
            used = max(stage_chunk_part(ps, meta, offs[c], ends[c], int_views(whole), b0, b1, p)
                       for p in range(CHUNK_PARTS))
            covered = np.zeros(size, np.int32)
            for part in STREAM_ORDER:
                alone = np.full(size, 0xEE, np.uint8)
                for k in range(3):
                    stage_chunk_part(ps, meta, offs[c], ends[c], int_views(alone), b0, b1, part,
                                     k, 3)
                inside = np.zeros(size, bool)
                for lo, hi in part_ranges(offs[c], ends[c], used, part):
                    inside[lo:hi] = True
                    covered[lo:hi] += 1
                written = alone != 0xEE
                assert not np.any(written & ~inside), part
                assert np.array_equal(alone[written], whole[written])
            assert covered.max() == 1
            assert np.all(covered[whole != 0xEE] == 1)


def test_a_small_calls_arguments_pack_as_their_signatures_say(fake_cuda):
    """Every launch of small calls: as many arguments as its prepared signature has, and packed
    (PyCUDA packs with struct) into the same bytes as the np.uintp / np.int32 the full path
    passes -- device addresses go as Python ints."""
    b = swv.backends()[0]
    regions = launches(resolve("shape-100x150@2000").load(), "original")[:6]
    regions.append(resolve("shape-1100x700@64").load())  # multi-tile bins: scratch
    for p in regions:
        _, launched, _, _ = _spent(fake_cuda, b, p)
        for (name, _), _, _, _, args in launched:
            sig = sw.LAYOUT_SIGNATURES.get(name, sw.KERNEL_SIGNATURE)
            assert len(args) == len(sig)
            for c, a in zip(sig, args):
                assert type(a) is (int if c == "P" else np.int32), (name, c, a)
            as_numpy = [np.uintp(a) if c == "P" else a for c, a in zip(sig, args)]
            assert struct.pack(sig, *args) == struct.pack(sig, *as_numpy)


def test_accept_gives_the_lengths_and_refuses_empty_pairs(fake_cuda):
    """``_accept`` (every call; a few haplotypes in Python, many in numpy): the longest read
    and haplotype and the read lengths of the PairSet's own properties; an empty haplotype or
    read refused only where it forms a pair, either way."""
    b = swv.backends()[0]
    few, many = ragged_pairs(seed=41, batches=3), ragged_pairs(seed=42, batches=60)
    assert len(few.hap_offsets) <= 64 < len(many.hap_offsets)
    for ps in (few, many):
        max_read, max_hap, rl = b._accept(ps)
        assert (max_read, max_hap) == (int(ps.read_lengths.max()), int(ps.hap_lengths.max()))
        assert np.array_equal(rl, ps.read_lengths)
    r = Read(b"ACGT", b"IIII", b"IIII", b"IIII", b"++++")
    for n_haps in (1, 40):
        haps = [b"ACGTA"] * n_haps
        assert b._accept(pack([Batch([], [b""]), Batch([r], haps)]))[:2] == (4, 5)
        with pytest.raises(ValueError, match="empty"):
            b._accept(pack([Batch([r], haps + [b""])]))
        with pytest.raises(ValueError, match="empty"):
            b._accept(pack([Batch([r, Read(b"", b"", b"", b"", b"")], haps)]))


def test_a_large_small_call_uploads_its_sequences_from_the_pairsets_arrays(fake_cuda,
                                                                          monkeypatch):
    """From PAGEABLE_FROM_BYTES of sequences (1m merged) a small call uploads the five read
    arrays and the haplotype bytes straight from the PairSet's arrays and the integers from its
    page-locked slot (prep stages only those): every byte the staged call's one upload carries
    outside the padding lands at the same device offset, and the results are the same; 10s
    (0.13 MB) keeps the one upload."""
    from hmmbench.pairhmm.subwarp.small import PAGEABLE_FROM_BYTES
    pairs = launches(resolve("1m").load(), "merged")[0]
    assert 5 * pairs.read_bases.nbytes + pairs.hap_bases.nbytes >= PAGEABLE_FROM_BYTES
    b = swv.backends()[0]
    log = []
    monkeypatch.setattr(fake_cuda, "memcpy_htod_async",
                        lambda dst, src, stream: log.append((int(dst), np.asarray(src))))
    b.pageable_from_bytes = 1 << 40
    staged = b.run(pairs)
    (base, whole), = log
    log.clear()
    b.pageable_from_bytes = PAGEABLE_FROM_BYTES
    ex = b.run(pairs)
    seqs = (pairs.read_bases, pairs.base_qual, pairs.ins_qual, pairs.del_qual, pairs.gcp_qual,
            pairs.hap_bases)
    assert len(log) == 8
    assert [np.shares_memory(src, a) for (_, src), a in zip(log, seqs)] == [True] * 6
    image, written = np.zeros_like(whole), np.zeros(len(whole), bool)
    for addr, src in log:
        image[addr - base:addr - base + src.size] = src.view(np.uint8)
        written[addr - base:addr - base + src.size] = True
    assert np.array_equal(image[written], whole[written]) and written.mean() > 0.95
    assert np.array_equal(ex.log10, staged.log10) and ex.info["bins"] == staged.info["bins"]
    # prep stages only the integers: what goes through the page-locked slot leaves the sequences
    slot_bytes = sum(src.nbytes for _, src in log[6:])
    assert slot_bytes <= whole.nbytes - sum(a.nbytes for a in seqs)
    log.clear()
    b.run(resolve("shape-100x150@3000").load())
    assert len(log) == 1


def test_a_small_call_from_graph_from_pairs_replays_its_launches_from_a_graph(fake_graphs):
    """From ``graph_from`` pairs (10s merged: 3,550) a small call's launches after its uploads
    are captured into a graph the first time and replayed by one graph launch after: no
    prepared launch, the same kernels and arguments. The graph's arguments are the same for
    every call of its size class: the layout takes -1 for its counts (staged after meta), the
    bins' bounds and grids come from the unit count's class."""
    from hmmbench.pairhmm.subwarp.staging import size_class
    ps = launches(resolve("10s").load(), "merged")[0]
    b = swv.backends()[0]
    first = b.run(ps)
    assert len(fake_graphs) == 1 and first.info["graph"]
    g = fake_graphs[0]
    drv = g.drv
    captured = [kernel_of(n)[0] for n, *_ in g.launches]
    assert captured[0].startswith("sw_layout") and len(captured) >= 3
    layout_args = g.launches[0][4]
    assert int(layout_args[0]) == -1 and int(layout_args[2]) == -1  # units, batches: staged
    bins = [x for x in g.launches if kernel_of(x[0])[0] == "subwarp_forward"]
    assert bins and all(int(x[4][2]) == size_class(ps.n_pairs) for x in bins)  # n_max
    # the counts after meta in the uploaded integers
    before, n_graph = len(drv.launches), drv.calls["graph_launch"]
    again = b.run(ps)
    assert len(fake_graphs) == 1 and drv.calls["graph_launch"] == n_graph + 1
    assert drv.launches[before:] == g.launches  # only the replay's
    assert again.info["graph"] and again.info["bin_streams"] == first.info["bin_streams"]
    assert set(again.timing) == set(first.timing)
    # below graph_from, or with it 0: no graph
    b.graph_from = 0
    plain = b.run(ps)
    assert len(fake_graphs) == 1 and not plain.info["graph"]


def test_the_counts_a_graph_call_stages_after_meta(fake_graphs):
    """A graph call stages its unit and batch counts after meta (the layout's -1 reads them
    there); the uploaded integers otherwise hold what the plain call's do, at the size class's
    offsets."""
    ps = launches(resolve("10s").load(), "merged")[0]
    b = swv.backends()[0]
    b.run(ps)
    drv = fake_graphs[0].drv
    up = np.frombuffer(drv.uploads[-1], np.uint8)
    plan = b._plan(ps, int(ps.read_lengths.max()))
    from hmmbench.pairhmm.subwarp.staging import class_offsets
    offs = class_offsets(ps, len(plan.meta) + 2)[0]
    words = up[offs[11]:offs[11] + 4 * (len(plan.meta) + 2)].view(np.int32)
    assert list(words[:len(plan.meta)]) == list(plan.meta)
    assert list(words[len(plan.meta):]) == [ps.n_pairs, ps.n_batches]  # per pair: units
    rl = up[offs[5]:offs[5] + 8 * len(ps.read_offsets)].view(np.int64)
    assert np.array_equal(rl, ps.read_offsets - ps.read_offsets[0])


def test_a_graph_serves_another_call_of_its_size_class_and_goes_with_its_lanes_buffers(
        fake_graphs):
    """Two sets of different sizes in the same size classes (and plan) share one graph (the
    second call captures nothing); a set of another class captures its own; a lane whose
    buffers move destroys its graphs."""
    from hmmbench.pairhmm.subwarp.staging import class_offsets, size_class
    full = resolve("1m").load()
    regions = launches(full, "original")
    # joined regions: a few prefixes, grouped by their graph keys
    by_key = {}
    for n in range(8, 60):
        ps = PairSet.concatenate(regions[:n])
        if ps.n_pairs < 1024 or ps.n_pairs >= 8192:
            continue
        # (a plan is per longest read)
        key = (class_offsets(ps, 0)[3], size_class(ps.n_pairs), int(ps.read_lengths.max()))
        by_key.setdefault(key, []).append(ps)
    same = next(v for v in by_key.values() if len(v) >= 2)
    other = next(v for k, v in by_key.items() if v is not same)
    b = swv.backends()[0]
    b.run(same[0])
    assert len(fake_graphs) == 1
    b.run(same[1])
    assert len(fake_graphs) == 1 and fake_graphs[0].drv.calls["graph_launch"] == 2
    b.run(other[0])
    assert len(fake_graphs) == 2
    b.run(resolve("1m").load())  # 29,307 pairs: larger buffers -- they move
    assert all(g.destroyed for g in fake_graphs[:2])
