"""opencl-subwarp-f64rescue (the OpenCL twin of cuda-subwarp-f64rescue) against the float64 reference on every OpenCL
device here, on both exchange paths: the device's shuffle (Intel's CPU runtime: one sub-group per
group) and the local-memory path (PoCL's, forced here on every device)."""
from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
import pytest

from cpu_reference.pairhmm import forward_log10
from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm import datasets
from hmmbench.pairhmm.model import Batch, Read, pack
from hmmbench.pairhmm.subwarp.opencl import SubwarpOpenCL, backends
from hmmbench.pairhmm.subwarp.layout import Bin, table_bytes
from helpers.opencl_subwarp import (DEVICES, TEST_BINS, TEST_LONG, UNOPTIMIZED, bin_build_options,
                                    needs_device)
from helpers.opencl_subwarp import backend as _backend
from helpers.real_data import real_set

TOLERANCE = 1e-4  # max |delta log10| against the float64 reference, as every Pair-HMM backend


def _check(backend, pairs, ref=None):
    ref = forward_log10(pairs, "float64") if ref is None else ref
    ex = backend.run(pairs)
    _matches(backend, ex, pairs, ref)
    return ex


def _matches(backend, ex, pairs, ref):
    assert ex.log10.shape == (pairs.n_pairs,)
    with np.errstate(invalid="ignore"):  # equal infinities (float64 underflow) agree
        d = np.where(ex.log10 == ref, 0.0, np.abs(ex.log10 - ref))
    delta = float(np.max(d, initial=0.0))
    assert delta <= TOLERANCE, (backend.device_name(), backend.params["path"], delta)
    if pairs.n_pairs:
        assert ex.timing["kernel"] > 0


_RUNS: dict = {}  # (device, path taken, input) -> Execution


def _check_path(device, exchange, name, pairs, ref):
    """(backend, ``_check``'s run) of the test bins on (device, exchange) for input ``name``.
    Where 'auto' takes the local path for every group size (no sub-group shuffles: PoCL), it
    and 'local' build the same programs and launch them alike: one run serves both, each
    asserting its checks on it."""
    b = _backend(device, exchange)
    key = (device, b.params["path"], name)
    if key in _RUNS:
        _matches(b, _RUNS[key], pairs, ref)
    else:
        _RUNS[key] = _check(b, pairs, ref)
    return b, _RUNS[key]


def _read(rng, length: int, q=None) -> Read:
    bases = rng.choice(list(b"ACGTN"), size=length, p=[.24, .24, .24, .24, .04]).astype(np.uint8)

    def qual(lo, hi):
        v = rng.integers(lo, hi, size=length) if q is None else np.full(length, q)
        return bytes(int(x) + 33 for x in v)
    return Read(bytes(bases), qual(0, 41), qual(10, 60), qual(10, 60), qual(5, 20))


def _hap(rng, length: int) -> bytes:
    return bytes(rng.choice(list(b"ACGTN"), size=length, p=[.24, .24, .24, .24, .04]).astype(np.uint8))


def edge_pairs():
    """Length 1 on either side, every bin's first and last length (TEST_BINS), a multi-tile read
    of several tiles, batches without reads or haplotypes, a read matching nothing (float32
    underflow: the float64 rescue; pairs are read-major, so it is the 4th last), haplotypes
    shorter than the group, a pair beyond even float64 (600 x 7: -inf, as the reference)."""
    rng = np.random.default_rng(3)
    lengths = (1, 2, 16, 17, 63, 64, 65, 128, 129, 256, 257, 600)
    conf = Read(b"A" * 60, *(bytes([40 + 33] * 60),) * 3, bytes([10 + 33] * 60))
    return pack([
        Batch([_read(rng, 1)], [_hap(rng, 1)]),
        Batch([_read(rng, 40)], [_hap(rng, 1), _hap(rng, 3)]),
        Batch([], [_hap(rng, 20)]),
        Batch([_read(rng, 5)], []),
        Batch([_read(rng, n) for n in lengths], [_hap(rng, 7), _hap(rng, 150), _hap(rng, 333)]),
        Batch([conf, _read(rng, 50)], [b"C" * 80, _hap(rng, 70)]),
    ])


@pytest.fixture(scope="module")
def edge():
    pairs = edge_pairs()
    return pairs, forward_log10(pairs, "float64")


def _reads_of_batch(pairs, b: int, reads) -> tuple:
    """(PairSet of one batch: ``reads`` of batch ``b`` x every haplotype of it, the indices of
    its pairs in ``pairs``): real reads against their own haplotypes, read-major as the set."""
    from hmmbench.pairhmm.model import PairSet, ranges
    reads = np.asarray(reads, np.int64)
    rl = pairs.read_lengths[reads]
    r_idx = ranges(pairs.read_offsets[reads], rl)
    h0, h1 = int(pairs.batch_haps[b]), int(pairs.batch_haps[b + 1])
    hap_at = pairs.hap_offsets[h0:h1 + 1]
    nh = h1 - h0
    sub = PairSet(read_bases=pairs.read_bases[r_idx],
                  read_offsets=np.concatenate([[0], np.cumsum(rl)]).astype(np.int64),
                  base_qual=pairs.base_qual[r_idx], ins_qual=pairs.ins_qual[r_idx],
                  del_qual=pairs.del_qual[r_idx], gcp_qual=pairs.gcp_qual[r_idx],
                  hap_bases=pairs.hap_bases[hap_at[0]:hap_at[-1]], hap_offsets=hap_at - hap_at[0],
                  batch_reads=np.array([0, len(reads)], np.int64),
                  batch_haps=np.array([0, nh], np.int64))
    first = pairs.batch_pairs[b] + (reads - pairs.batch_reads[b]) * nh
    return sub, (first[:, None] + np.arange(nh)).ravel()


#: 1m's reads with a pair under the float32 floor (1e-28 with C: the float64 rescue's), by the
#: float64 reference of the whole set (its 13 such pairs, 10^-64.4 .. 10^-85.2, 5 s of NumPy);
#: the ``real`` fixture asserts that they are the rescue reads' only reads under the floor
RESCUE_READS_1M = (1935, 2042, 5497, 5827)


def rescue_reads(pairs, low_reads) -> tuple:
    """(PairSet, the indices of its pairs in ``pairs``): the reads ``low_reads`` of ``pairs`` (a
    real set), each with the first read of every test bin in its batch and every haplotype of
    that batch; then the longest read against its longest haplotype and the longest haplotype
    against its longest read, each a batch of its own: real data with its rescue pairs, every
    bin and its longest read and haplotype at a fraction of the set's size (1m: its 13 rescue
    pairs among 68 of its 29,307 pairs, 0.3 % of its cells)."""
    parts, picked = [], []
    bin_of = np.searchsorted([hi for hi, _, _ in TEST_BINS], pairs.read_lengths)
    low_reads = np.asarray(low_reads, np.int64)
    for b in sorted(set((np.searchsorted(pairs.batch_reads, low_reads, "right") - 1).tolist())):
        r0, r1 = int(pairs.batch_reads[b]), int(pairs.batch_reads[b + 1])
        own = r0 + np.arange(r1 - r0)
        firsts = [int(own[bin_of[own] == k][0]) for k in range(len(TEST_BINS) + 1)
                  if (bin_of[own] == k).any()]
        sub, at = _reads_of_batch(pairs, b, sorted(set(low_reads.tolist()) & set(own.tolist())
                                                   | set(firsts)))
        parts.append(sub)
        picked.append(at)
    read_len, hap_len = pairs.pair_read_lengths, pairs.pair_hap_lengths
    of_read = np.flatnonzero(pairs.pair_read == np.argmax(pairs.read_lengths))
    of_hap = np.flatnonzero(pairs.pair_hap == np.argmax(pairs.hap_lengths))
    longest = np.array([of_read[np.argmax(hap_len[of_read])], of_hap[np.argmax(read_len[of_hap])]])
    sub = pairs.concatenate(parts + [pairs.subset_pairs(longest)])
    assert sub.max_read_length == pairs.max_read_length
    assert sub.max_hap_length == pairs.max_hap_length
    return sub, np.concatenate(picked + [longest])


def case_reads(pairs, ref):
    """The reads of ``pairs`` (a real set) that hold its cases, each against every haplotype of
    its batch: every 10th read, the longest read and the first read of the longest haplotype's
    batch (10s: a tenth of its cells, every bin its whole set fills; asserted by the tests)."""
    keep = set(range(0, int(pairs.batch_reads[-1]), 10)) | {int(np.argmax(pairs.read_lengths))}
    hap_batch = int(np.searchsorted(pairs.batch_haps, np.argmax(pairs.hap_lengths), "right")) - 1
    keep.add(int(pairs.batch_reads[hap_batch]))
    parts, picked = [], []
    for b in range(pairs.n_batches):
        own = sorted(r for r in keep if pairs.batch_reads[b] <= r < pairs.batch_reads[b + 1])
        if own:
            sub, at = _reads_of_batch(pairs, b, own)
            parts.append(sub)
            picked.append(at)
    sub = pairs.concatenate(parts)
    assert sub.max_read_length == pairs.max_read_length
    assert sub.max_hap_length == pairs.max_hap_length
    return sub, np.concatenate([ref[at] for at in picked])


@functools.lru_cache(maxsize=None)
def _default_device() -> str:
    """The device hmmbench picks by default: its own exchange path runs the whole 10s."""
    label = opencl_api._label(*opencl_api.choose_device())
    return label if label in DEVICES else DEVICES[0]


def _bin_labels(lengths) -> set:
    """The labels of the test bins that reads of ``lengths`` (none past the last) fall in."""
    los = (1, *(hi + 1 for hi, _, _ in TEST_BINS[:-1]))
    return {f"p{p}k{k}[{lo}..{hi}]" for lo, (hi, p, k) in zip(los, TEST_BINS)
            if ((lengths >= lo) & (lengths <= hi)).any()}


@pytest.fixture(scope="module")
def real():
    from cpu_reference.pairhmm.constants import F32_MIN_ACCEPTED, LOG10_C32
    ten, one_m = real_set("10s").load(), real_set("1m").load()
    out = {"10s": (ten, forward_log10(ten, "float64")), "1m": (one_m, None)}
    out["10s cases"] = case_reads(*out["10s"])
    sub, at = rescue_reads(one_m, RESCUE_READS_1M)
    out["1m-rescue"] = sub, forward_log10(sub, "float64")
    low = out["1m-rescue"][1] < np.log10(F32_MIN_ACCEPTED) - LOG10_C32
    assert low.sum() == 13 and set(one_m.pair_read[at[low]].tolist()) == set(RESCUE_READS_1M)
    return out


# --- host side (no device) ------------------------------------------------------------------------
def test_work_groups_shrink_until_the_emission_table_fits_local_memory():
    b = SubwarpOpenCL("t")
    nvidia = SimpleNamespace(device=SimpleNamespace(local_mem_size=48 * 1024))
    assert table_bytes(8, 32, 128 // 8) > 48 * 1024
    assert b.block(nvidia, Bin(1, 256, 8, 32), "ptx", False) == 64
    for p, k in ((4, 4), (4, 16), (8, 32), (16, 24), (32, 32)):
        for double in (False, True):
            block = b.block(nvidia, Bin(1, p * k, p, k), "ptx", double)
            assert table_bytes(p, k, block // p, double) <= 48 * 1024
            assert block == 128 or table_bytes(p, k, 2 * block // p, double) > 48 * 1024
    assert b.block(nvidia, Bin(1, 32, 4, 8), "local", False) == 4  # one group per work-group
    cpu = SimpleNamespace(device=SimpleNamespace(local_mem_size=256 * 1024))
    assert b.block(cpu, Bin(1, 1024, 32, 32), "khr", False) == 128


def test_registered_with_the_cuda_twins_bins():
    from hmmbench.pairhmm.subwarp.variants import backends as cuda_backends
    ocl_exp, ocl_batched, ocl = backends()
    cuda = cuda_backends()[0]
    assert ocl.name == "opencl-subwarp-f64rescue" and ocl.family == cuda.family == "subwarp"
    assert ocl_exp.name == "opencl-subwarp" and ocl_exp.exp_scale and not ocl.exp_scale
    assert ocl_batched.name == "opencl-subwarp-batched" and ocl_batched.exp_scale
    assert ocl_batched.params["batch_calls"] is True
    for b in (ocl, ocl_exp, ocl_batched):
        assert b._bins_table == cuda._bins_table and b._small_tiers == cuda._small_tiers
        assert b._long == cuda._long


def test_kernel_sources_share_the_body_with_cuda():
    src = opencl_api.kernel_source("pairhmm/subwarp.cl")
    assert "SW_KERNEL(subwarp_forward)" in src      # the shared body, inlined
    assert "#include" not in src.replace("#include \"", "#include_")  # every include expanded


# --- every device, both paths -----------------------------------------------------------------------
@needs_device
@pytest.mark.parametrize("exchange", ["auto", "local"])
@pytest.mark.parametrize("device", DEVICES)
def test_edge_cases_and_the_float64_rescue(edge, device, exchange):
    pairs, ref = edge
    assert ref[-4] < np.log10(1e-28) - np.log10(2.0 ** 120)  # really below the 1e-28 rule
    b, ex = _check_path(device, exchange, "edge", pairs, ref)
    assert ex.n_fallback >= 1 and ex.info["fallback_on"]
    assert any("-mt" in label for label in ex.info["bins"])  # the multi-tile path ran
    if exchange == "local":
        assert b.params["path"] == opencl_api.PATH_NAMES["local"]


@needs_device
def test_an_unoptimized_cpu_build_gives_the_optimized_builds_bits():
    """The tests' backends build their CPU programs without the optimizer (``UNOPTIMIZED``, a
    tenth of the compile time): on Intel's runtime (sub-group shuffles) and on PoCL's (local
    memory) a float32 bin and its float64 rescue give the optimized programs' results to the
    bit, the rescue's pairs included (one p4k4 bin: the optimized CPU builds of the wider ones
    take 2-15 s each)."""
    from hmmbench.apis.opencl import OPT_DISABLE
    rng = np.random.default_rng(5)
    conf = Read(b"A" * 16, *(bytes([50 + 33] * 16),) * 4)  # 1e-79 against the C's: rescued
    pairs = pack([Batch([conf, _read(rng, 16), _read(rng, 9)], [b"C" * 40, _hap(rng, 30)]),
                  Batch([_read(rng, n) for n in (1, 5, 14)], [_hap(rng, 12), _hap(rng, 50)])])
    ref = forward_log10(pairs, "float64")
    picked = [next((d for d in DEVICES if vendor in d), None) for vendor in ("Intel(R) OpenCL", "Portable")]
    assert any(picked)
    for device in filter(None, picked):
        runs = [SubwarpOpenCL("t", device=device, bins=((16, 4, 4),), long_config=None,
                              small_tiers=None, unoptimized_on_cpu=flag) for flag in (False, True)]
        optimized, unoptimized = (_check(b, pairs, ref) for b in runs)
        assert 0 < optimized.n_fallback < pairs.n_pairs  # the float64 rescue ran
        assert unoptimized.n_fallback == optimized.n_fallback
        assert np.array_equal(unoptimized.log10, optimized.log10, equal_nan=True), device
        for b, flag in zip(runs, (False, True)):  # the bin's and its rescue's programs
            options = bin_build_options(b)
            assert len(options) == 2 and all((OPT_DISABLE in o) == flag for o in options)
        assert runs[1].params["unoptimized_on_cpu"] and "unoptimized_on_cpu" not in runs[0].params


@needs_device
@pytest.mark.parametrize("dataset", ["10s", "1m"])
@pytest.mark.parametrize("exchange", ["auto", "local"])
@pytest.mark.parametrize("device", DEVICES)
def test_matches_reference_on_real_data(real, device, exchange, dataset):
    """10s whole on the default device's own path, elsewhere its reads that hold its cases
    (``case_reads``: every bin the whole set fills, its longest read and haplotype, a tenth of
    its cells); 1m as its rescue reads and longest read and haplotype (``rescue_reads``: the
    cases the whole set holds, at 0.3 % of its cells)."""
    if dataset == "1m":
        name = "1m-rescue"
    else:
        whole = device == _default_device() and exchange == "auto"
        name = "10s" if whole else "10s cases"
    pairs, ref = real[name]
    _, ex = _check_path(device, exchange, name, pairs, ref)
    # every test bin the whole set's reads fill ran (1m and 10s: all of them)
    assert set(ex.info["bins"]) == _bin_labels(real[dataset][0].read_lengths) \
        == _bin_labels(np.array([hi for hi, _, _ in TEST_BINS]))
    if dataset == "1m":  # the set's underflows and its longest read are in
        assert ex.n_fallback >= 1 and pairs.max_read_length == real["1m"][0].max_read_length


@needs_device
def test_the_registered_bins_match_the_reference_on_10s(real):
    """cuda-subwarp's own bins (10s: its smallest size tier, p32 k = 4 and 8), on the first
    device, on 10s's reads that hold its cases (``case_reads``: both bins)."""
    pairs, ref = real["10s cases"]
    ex = _check(_backend(DEVICES[0], "auto", registered=True), pairs, ref)
    assert set(ex.info["bins"]) == {"p32k4[1..128]", "p32k8[129..256]"}


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_the_shuffle_path_runs_where_the_device_has_sub_groups(device):
    b = _backend(device, "auto")
    kit = b.kit()
    # Intel's runtime only: PoCL 5 on the GPU machine's Xeon announces cl_intel_subgroups but the
    # probe finds its sub-groups are not one team wide, so it rightly takes the local path there.
    if kit.shuffle in ("khr", "intel") and kit.required_sub_group \
            and "Intel" in kit.platform.name:
        assert all(b.path(kit, p) == kit.shuffle for p in (4, 8, 16, 32))
        assert b.params["path"] == opencl_api.PATH_NAMES[kit.shuffle]


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_empty_inputs(device):
    b = _backend(device, "auto")
    ex = b.run(pack([Batch([], [])]))
    assert ex.log10.shape == (0,) and ex.n_fallback == 0
    r = Read(b"ACGT", b"IIII", b"IIII", b"IIII", b"++++")
    empty = Read(b"", b"", b"", b"", b"")
    assert "empty" in b.refuse_reason(pack([Batch([r, empty], [b"ACG"])]))
    with pytest.raises(ValueError, match="empty"):
        b.run(pack([Batch([r, empty], [b"ACG"])]))


# --- the device's work: layout, stages, buffers (as the CUDA twin's small call) ----------------------
def _device_layout(b: SubwarpOpenCL, pairs, bins):
    """One float32 pass of ``device_pass``; its items per bin as the device laid them out."""
    from hmmbench.apis.opencl import cl_module
    from hmmbench.pairhmm.subwarp.opencl_call import RANGE_INTS, DeviceBuffers, device_pass
    kit = b.kit()
    bufs = DeviceBuffers(kit)
    timing = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
    device_pass(b, kit, bufs, pairs, bins, False, timing)
    per_pair = pairs.n_pairs <= b.per_pair_below
    units = pairs.n_pairs if per_pair else int(pairs.batch_reads[-1] - pairs.batch_reads[0])
    items = np.empty((units, 4), np.int32)
    ranges = np.empty(len(bins) * RANGE_INTS, np.int32)
    cl = cl_module()
    cl.enqueue_copy(kit.queue, items, kit._scratch["subwarp_items"], is_blocking=True)
    cl.enqueue_copy(kit.queue, ranges, kit._scratch["subwarp_bin_range"], is_blocking=True)
    stride = RANGE_INTS
    return {bins[i]: items[ranges[i * stride]:ranges[i * stride] + ranges[i * stride + 1]]
            for i in range(len(bins))}, timing


@needs_device
@pytest.mark.parametrize("per_pair", [True, False])
def test_the_device_layout_puts_every_item_in_its_bin_as_the_host_layout(edge, per_pair):
    """subwarp_layout.cl against layout.host_layout: each bin the same items (the order inside a
    work level is free); per read, the sequences uploaded from the PairSet's own arrays."""
    from hmmbench.pairhmm.subwarp.layout import host_layout
    pairs, _ = edge
    b = SubwarpOpenCL("t", device=DEVICES[0], bins=TEST_BINS, long_config=TEST_LONG,
                      small_tiers=None, **UNOPTIMIZED, per_pair_below=1 << 30 if per_pair else 0)
    b.pageable_from_bytes = 1 << 40 if per_pair else 0
    bins = b.bins_for(pairs)
    got, timing = _device_layout(b, pairs, bins)
    want = host_layout(pairs, bins, per_pair=per_pair)
    assert sum(len(v) for v in got.values()) == len(want.items) > 0
    for bin_, lo, hi in want.bin_ranges:
        assert sorted(map(tuple, got[bin_].tolist())) == \
            sorted(map(tuple, want.items[lo:hi].tolist()))
    for bin_ in bins:
        if bin_ not in {x for x, _, _ in want.bin_ranges}:
            assert len(got[bin_]) == 0
    assert timing["h2d"] > 0 and timing["kernel"] > 0 and timing["d2h"] > 0


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_equal_length_sets_short_and_multi_tile(device):
    """Equal-length sets: every item on one key (the layout's hottest atomics), one of them past
    the last bin (the multi-tile kernel)."""
    for name in ("equal-100@400", "equal-300@40"):
        pairs = datasets.resolve(name).load()
        _check(_backend(device, "auto"), pairs)


@needs_device
def test_buffers_are_reused_across_calls_and_results_repeat(edge, real):
    """A smaller call after a larger one reuses the staging and device buffers (grow-only, as
    the CUDA twin's lane); the same input gives the same bits on every call."""
    b = _backend(DEVICES[0], "auto")
    big, _ = real["1m-rescue"]
    first = b.run(big)
    kit = b.kit()
    held = dict(kit._scratch), b._buffers._host[0]
    small, ref = edge
    one = b.run(small)
    assert b._buffers._host[0] is held[1]
    for name in ("subwarp_slot", "subwarp_items", "subwarp_raw", "subwarp_key_rank"):
        assert kit._scratch[name] is held[0][name]
    assert np.array_equal(b.run(small).log10, one.log10)
    assert np.array_equal(b.run(big).log10, first.log10)
    assert first.timing["prep"] > 0 and first.timing["h2d"] > 0 and first.timing["d2h"] > 0
    # every buffer a launch was given is a whole buffer (offsets go as arguments): no
    # sub-buffer for a runtime to release after its parent
    from hmmbench.apis.opencl import cl_module
    launches = [k for k, _ in b._bin_kernels.values()] + list(b._buffers.layout().values())
    given = [a for k in launches for a in k.args if isinstance(a, cl_module().MemoryObject)]
    assert len(given) > 10
    assert all(a.get_info(cl_module().mem_info.ASSOCIATED_MEMOBJECT) is None for a in given)
    # closed: the page-locked maps given back and the queues drained before anything is
    # dropped; a backend closed runs again from scratch with the same bits
    maps = b._buffers._host[1].base, b._buffers._out[1].base
    b.close()
    assert b._buffers is None
    for m in maps:
        with pytest.raises(Exception):      # pyopencl refuses to unmap a released map twice
            m.release(kit.queue)
    assert np.array_equal(b.run(big).log10, first.log10)
    b.close()


# --- the call's host work as the CUDA twin's: rescue on the device, staging, side queues ---------
@needs_device
@pytest.mark.parametrize("staging", ["threads", "pooled", "pageable", "one copy"])
def test_the_device_rescue_recomputes_the_pairs_the_host_rule_picks(edge, real, staging):
    """The float32 kernels queue their pairs under 1e-28 on the device and the float64 kernels
    recompute them (as CUDA's -f64rescue): the same pairs as the host's finish_float32 rule picks
    from the raw sums, results within tolerance, whether the call is staged by the threads and
    uploaded part by part, staged by the threads in pieces and uploaded in one copy, uploaded
    from the PairSet's arrays or staged by the calling thread in one copy, with the bins on side
    queues or all on one, launched as a small call or (threads) as a large one."""
    b = SubwarpOpenCL("t", device=DEVICES[0], bins=TEST_BINS, long_config=TEST_LONG,
                      small_tiers=None, **UNOPTIMIZED)
    b.pool_from_pairs = 0 if staging == "threads" else 1 << 40
    # staged by the threads: launched as a large call (bins sized by the host's counts)
    b.small_call_pairs = 0 if staging == "threads" else 1 << 16
    b.pageable_from_bytes = 0 if staging == "pageable" else None
    b.pooled_from_bytes = 0 if staging == "pooled" else None
    b._buffers_of(b.kit()).threads = 2  # pieces on a machine of any size
    from hmmbench.apis.opencl import cl_module
    kit = b.kit()
    for pairs, ref in (edge, real["1m-rescue"]):
        for side in (True, False):
            b.side_queues, b.rescue_on_device = side, True
            slot = kit._scratch.get("subwarp_slot")
            if slot is not None:  # the last call's sequences gone: a kernel that reads the
                # slot before this call's upload is in (a side queue's) computes garbage
                cl_module().enqueue_fill_buffer(kit.queue, slot, np.uint8(0x41), 0, slot.size)
            ex = _check(b, pairs, ref)
            assert ex.info["fallback_on"] == "device (float64)"
            assert ex.info["queues"] == (len(ex.info["bins"]) if side else 1)
            assert set(ex.info["host_s"]) >= {"prep", "enqueue", "device_wait", "call"}
            b.rescue_on_device = False
            host = _check(b, pairs, ref)
            assert host.info["fallback_on"] == "device (float64)" and "queues" not in host.info
            assert ex.n_fallback == host.n_fallback >= 1
            assert ex.info["bins"] == host.info["bins"]
            assert np.allclose(ex.log10, host.log10, rtol=0, atol=1e-9, equal_nan=True)


@needs_device
def test_the_longest_reads_bin_is_enqueued_first_and_the_recompute_after_every_bin(real):
    """A small call's bins go in longest reads first (as CUDA's; the bin that runs longest starts
    before the host spends ~25 us a launch on the others), each on its queue, then each bin's
    recompute queue's kernel on that bin's queue; the other order (``longest_bins_first`` off:
    shortest first, each recompute right after its bin) gives the same results. The launches
    are made once per call shape and kept (as CUDA's SmallLaunches): made anew every call
    (``keep_launches`` off), the same results."""
    pairs, ref = real["1m-rescue"]
    b = SubwarpOpenCL("t", device=DEVICES[0], bins=TEST_BINS, long_config=TEST_LONG,
                      small_tiers=None, **UNOPTIMIZED)
    results = {}
    for first in (True, False):
        b.longest_bins_first = first
        results[first] = _check(b, pairs, ref)
        again = b.run(pairs)
        assert np.array_equal(again.log10, results[first].log10)
        # one shape a plan and order, its launches made once and kept
        shape = b._buffers.shapes[next(k for k in b._buffers.shapes if k[11] == first)]
        seen = [(k, step_bin.lo, redo) for k, *_, (step_bin, redo) in shape.steps]
        bins = [(q, lo) for q, lo, redo in seen if not redo]
        redo = [q for q, _, r in seen if r]
        assert len(bins) == len(results[first].info["bins"]) >= 2
        assert len(redo) == len(bins)  # 1m's bins each feed a recompute queue of their own
        los = [lo for _, lo in bins]
        assert los == sorted(los, reverse=first)
        assert len({q for q, _ in bins}) == len(bins)  # side queues: one a bin
        if first:  # every bin before any recompute kernel, each on its bin's queue
            assert [r for _, _, r in seen] == [False] * len(bins) + [True] * len(bins)
            assert redo == [q for q, _ in bins]
        else:
            assert [r for _, _, r in seen] == [False, True] * len(bins)
    assert len(b._buffers.shapes) == 2
    assert np.array_equal(results[True].log10, results[False].log10)
    assert results[True].n_fallback == results[False].n_fallback >= 1
    b.keep_launches = False
    b._buffers.shapes.clear()
    anew = _check(b, pairs, ref)
    assert not b._buffers.shapes
    assert np.array_equal(anew.log10, results[False].log10)


@needs_device
def test_the_layout_sizes_each_recompute_queue_by_the_pairs_of_its_bins(edge):
    """Queue heads as CUDA's scan writes them: each queue's first slot is the pairs of the
    queues before it (each bin's pairs go to its queue, rescue.recompute_queues), its count the
    pairs the float32 kernels queued."""
    from hmmbench.apis.opencl import cl_module
    from hmmbench.pairhmm.subwarp.opencl_call import RANGE_INTS
    from hmmbench.pairhmm.subwarp.rescue import recompute_queues
    pairs, _ = edge
    b = SubwarpOpenCL("t", device=DEVICES[0], bins=TEST_BINS, long_config=TEST_LONG,
                      small_tiers=None, **UNOPTIMIZED, per_pair_below=0)
    ex = b.run(pairs)
    bins = b.bins_for(pairs)
    _, queue_of = recompute_queues(bins)
    kit, stride = b.kit(), RANGE_INTS
    ranges_heads = np.empty(2 * len(bins) * stride, np.int32)  # bin ranges, then queue heads
    cl_module().enqueue_copy(kit.queue, ranges_heads, kit._scratch["subwarp_out"],
                             is_blocking=True)
    heads = ranges_heads[len(bins) * stride:]
    lengths = pairs.pair_read_lengths
    pairs_of = [int(np.sum((lengths >= x.lo) & (lengths <= x.hi))) for x in bins]
    size = [sum(n for n, q in zip(pairs_of, queue_of) if q == j) for j in range(len(bins))]
    assert [int(heads[j * stride]) for j in range(len(bins))] == \
        [sum(size[:j]) for j in range(len(bins))]
    assert sum(int(heads[j * stride + 1]) for j in range(len(bins))) == ex.n_fallback >= 1


@needs_device
def test_the_scan_leaves_the_layout_counters_clear_and_a_stopped_call_is_repaired(edge):
    """The layout's key histogram and pairs per bin are 0 after every call (the scan clears them
    for the next count, no clearing launch); counters a call left mid-layout (marked not clear)
    are cleared before the next count: the same items per bin and results as before."""
    from hmmbench.apis.opencl import cl_module
    cl = cl_module()
    pairs, ref = edge
    b = SubwarpOpenCL("t", device=DEVICES[0], bins=TEST_BINS, long_config=TEST_LONG,
                      small_tiers=None, **UNOPTIMIZED)
    first = _check(b, pairs, ref)
    bufs, q = b._buffers, b.kit().queue
    hist, bin_pairs = bufs.counters()
    for buf in (hist, bin_pairs):
        got = np.empty(buf.size // 4, np.int32)
        cl.enqueue_copy(q, got, buf, is_blocking=True)
        assert not got.any()
    assert bufs.counters_clear
    for buf in (hist, bin_pairs):  # a count without its scan
        cl.enqueue_copy(q, buf, np.full(buf.size // 4, 7, np.int32), is_blocking=True)
    bufs.counters_clear = False
    again = _check(b, pairs, ref)
    assert again.info["bins"] == first.info["bins"]
    assert np.array_equal(again.log10, first.log10)


@needs_device
def test_a_launch_sets_the_arguments_that_changed():
    """``Launch`` keeps its kernel's arguments between launches: a scalar or a buffer that
    changes is set again, an equal scalar (another object) or the same buffer is kept."""
    from hmmbench.apis.opencl import cl_module, device_kit
    from hmmbench.pairhmm.subwarp.opencl_call import Launch
    cl = cl_module()
    kit = device_kit(DEVICES[0])
    prg = cl.Program(kit.context, "__kernel void put(__global int* x, int v) "
                                  "{ x[get_global_id(0)] = v; }").build()
    launch = Launch(cl.Kernel(prg, "put"))
    bufs = [cl.Buffer(kit.context, cl.mem_flags.READ_WRITE, 64) for _ in range(2)]
    for buf, v, want in ((0, 5, (5, None)), (0, 7, (7, None)), (1, 7, (7, 7)),
                         (1, 9, (7, 9)), (1, 9, (7, 9))):
        launch(kit.queue, (16,), None, (bufs[buf], np.int32(v))).wait()
        for w, b_ in zip(want, bufs):
            if w is not None:
                got = np.empty(16, np.int32)
                cl.enqueue_copy(kit.queue, got, b_, is_blocking=True)
                assert (got == w).all(), (buf, v, got)
