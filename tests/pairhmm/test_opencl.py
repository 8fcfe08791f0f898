"""OpenCL backends: every family against the float64 NumPy reference, on every OpenCL device here.

CI gets two CPU devices from scripts/install_opencl_cpu.sh: PoCL (no sub-groups: the warp family's
local-memory path) and Intel's CPU runtime (sub-group shuffles: the warp family's shuffle path).
Tests needing a device skip with the reason when there is none. On these CPU devices the tests'
backends build without the optimizer (``UNOPTIMIZED``: the same bits, checked below on every device
against the optimized programs a user runs, at a third to a fifth of the compile time).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import REPO, SHARED_DATA
from hmmbench.pairhmm.intertask import opencl
from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm.datasets.blockfmt import load_block
from hmmbench.pairhmm.model import Batch, Read, pack

TOLERANCE = 1e-4  # max |delta log10| against the float64 reference


def _data_dir():
    for d in os.environ.get("HMMBENCH_DATA_PATH", "").split(":") + [
            str(SHARED_DATA)]:
        if d and Path(d, "tiny.in").is_file():
            return Path(d)
    return None


def _device_labels() -> list:
    try:
        found = opencl_api.usable_devices()
    except ImportError:
        return []
    return [opencl_api._label(p, d) for p, d in found]


DEVICES = _device_labels()
needs_device = pytest.mark.skipif(not DEVICES, reason="no OpenCL platform/device (pyopencl or an "
                                  "ICD missing; scripts/install_opencl_cpu.sh installs CPU ones)")
FAMILIES = [b.name for b in opencl.backends()]
#: The tests' backends' ``unoptimized_on_cpu``: their CPU builds cost several times their runs.
UNOPTIMIZED = {"unoptimized_on_cpu": True}


def _reference(pairs):
    from cpu_reference.pairhmm import forward_log10
    return forward_log10(pairs, "float64")


@pytest.fixture(scope="module")
def real_sets():
    d = _data_dir()
    if d is None:
        pytest.skip("real data sets not found (set HMMBENCH_DATA_PATH)")
    out = {}
    for name in ("tiny", "10s"):
        pairs = load_block(d / f"{name}.in")
        out[name] = (pairs, _reference(pairs))
    out["10s cases"] = _cases(*out["10s"])
    return out


#: log10 likelihood below which the float32 kernels' sum (2^120 C) misses GKL's 1e-28 and the
#: pair is recomputed in float64; every pair within RESCUE_MARGIN decades of it is kept as a case
RESCUE_LOG10 = np.log10(1e-28) - 120 * np.log10(2.0)
RESCUE_MARGIN = 2.0


def _cases(pairs, ref, every=100):
    """The pairs of a set that hold its cases: the longest read's and the longest haplotype's
    (which set the wavefront kernels' HAP_STRIDE and the passes over a read), the least likely
    one and every pair near or below the float32 rescue threshold (10s: none, its least likely
    is 3.4 decades above it), and every 100th for the mix of lengths a layout groups."""
    near_rescue = np.flatnonzero(ref < RESCUE_LOG10 + RESCUE_MARGIN)
    keep = set(range(0, pairs.n_pairs, every)) | set(near_rescue.tolist())
    keep |= {int(np.argmax(pairs.pair_read_lengths)), int(np.argmax(pairs.pair_hap_lengths)),
             int(np.argmin(ref))}
    idx = np.array(sorted(keep))
    sub = pairs.subset_pairs(idx)
    assert sub.max_read_length == pairs.max_read_length
    assert sub.max_hap_length == pairs.max_hap_length
    assert np.isin(near_rescue, idx).all() and ref[idx].min() == ref.min()
    return sub, ref[idx]


_BACKENDS: dict = {}


def _backend(device: str, name: str):
    """One backend object per (device, family) for the whole module (programs stay compiled)."""
    key = (device, name)
    if key not in _BACKENDS:
        b = {x.name: x for x in opencl.backends(device=device, **UNOPTIMIZED)}[name]
        reason = b.unavailable_reason()
        if reason:
            pytest.skip(f"{name} on {device}: {reason}")
        _BACKENDS[key] = b
    return _BACKENDS[key]


def _check(backend, pairs, ref):
    ex = backend.run(pairs)
    assert ex.log10.shape == (pairs.n_pairs,)
    assert np.all(np.isfinite(ex.log10))
    delta = float(np.max(np.abs(ex.log10 - ref), initial=0.0))
    assert delta <= TOLERANCE, f"{backend.name} on {backend.device_name()}: max delta {delta}"
    for stage in ("prep", "h2d", "kernel", "d2h"):
        assert ex.timing[stage] >= 0
    if pairs.n_pairs:
        assert ex.timing["kernel"] > 0
    return ex


# --- real data: every family, every device -------------------------------------------------------
@needs_device
@pytest.mark.parametrize("dataset", ["tiny", "10s"])
@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("device", DEVICES)
def test_family_matches_reference_on_real_data(real_sets, device, name, dataset):
    """tiny whole; of 10s, the pairs that hold its cases (``_cases``)."""
    if dataset == "10s":
        dataset = "10s cases"
    pairs, ref = real_sets[dataset]
    _check(_backend(device, name), pairs, ref)


# --- edge cases ----------------------------------------------------------------------------------
def _phred(q) -> bytes:
    return bytes(int(x) + 33 for x in q)


def _read(rng, length, n_rate=0.0, q=None) -> Read:
    bases = rng.choice(list(b"ACGT"), size=length).astype(np.uint8)
    bases[rng.random(length) < n_rate] = ord("N")
    def qual(lo, hi):
        return _phred(rng.integers(lo, hi, size=length) if q is None else np.full(length, q))
    return Read(bytes(bases), qual(5, 41), qual(10, 60), qual(10, 60), qual(5, 20))


def _hap(rng, length, n_rate=0.0) -> bytes:
    h = rng.choice(list(b"ACGT"), size=length).astype(np.uint8)
    h[rng.random(length) < n_rate] = ord("N")
    return bytes(h)


def edge_pairs():
    """Length 1 on either side, N bases, reads longer than any team or tile (several passes),
    one-pair batches, empty batches (no reads / no haplotypes), mixed lengths in one batch."""
    rng = np.random.default_rng(7)
    batches = [
        Batch([_read(rng, 1)], [_hap(rng, 1)]),
        Batch([_read(rng, 1)], [_hap(rng, 37)]),
        Batch([_read(rng, 29)], [_hap(rng, 1)]),
        Batch([], [_hap(rng, 20)]),
        Batch([_read(rng, 12, n_rate=0.3)], [_hap(rng, 40, n_rate=0.2), b"N" * 15]),
        Batch([_read(rng, 300), _read(rng, 257), _read(rng, 33)], [_hap(rng, 310), _hap(rng, 90)]),
        Batch([_read(rng, 5)], []),
        Batch([_read(rng, L) for L in (2, 3, 16, 17, 31, 32, 33, 64, 65, 129)],
              [_hap(rng, L) for L in (8, 64, 131)]),
    ]
    return pack(batches)


def underflow_pairs():
    """Pairs whose float32 sum falls below 1e-28: confident reads that match nothing. The
    haplotypes (257..320 bases) give the wavefront kernels the HAP_STRIDE of the edge set and
    10s, whose programs (float32 and float64) are built already."""
    rng = np.random.default_rng(11)
    read = Read(b"A" * 60, _phred([40] * 60), _phred([45] * 60), _phred([45] * 60), _phred([10] * 60))
    return pack([Batch([read, _read(rng, 50)], [b"C" * 300, _hap(rng, 290)])])


@pytest.fixture(scope="module")
def edge():
    pairs = edge_pairs()
    return pairs, _reference(pairs)


@needs_device
@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("device", DEVICES)
def test_family_edge_cases(edge, device, name):
    pairs, ref = edge
    assert pairs.n_pairs == 1 + 1 + 1 + 0 + 2 + 6 + 0 + 30
    _check(_backend(device, name), pairs, ref)


@needs_device
@pytest.mark.parametrize("vec", [2, 4])
@pytest.mark.parametrize("tile", [1, 2, 6])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_inter_task_gpu_settings_on_any_device(edge, real_sets, device, interleaved, tile, vec):
    """The GPU's scratch blocking (VEC columns per access) and 32-wide groups, checked here too."""
    b = opencl.InterTask("opencl-inter-test", tile=tile, interleaved=interleaved, local_size=32,
                         vec=vec, device=device, **UNOPTIMIZED)
    if b.unavailable_reason():
        pytest.skip(b.unavailable_reason())
    _check(b, *edge)
    _check(b, *real_sets["tiny"])


@needs_device
@pytest.mark.parametrize("name", ["opencl-inter-tile4-sorted", "opencl-intra-naive", "opencl-warp"])
@pytest.mark.parametrize("device", DEVICES)
def test_float32_underflow_is_recomputed_and_counted(device, name):
    pairs = underflow_pairs()
    ref = _reference(pairs)
    assert ref[0] < np.log10(1e-28) - np.log10(2.0 ** 120)  # really below GKL's threshold
    ex = _check(_backend(device, name), pairs, ref)
    assert ex.n_fallback >= 1
    assert ex.info["fallback_on"]


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_a_cpu_devices_recompute_in_pieces_shares_one_float64_program(edge, device,
                                                                     monkeypatch):
    """The edge set's float64 recompute runs in pieces whose longest haplotypes differ; a CPU
    device lays each out for the call's longest haplotype, so they share one program (a GPU
    keeps each piece's own)."""
    pairs, ref = edge
    b = _backend(device, "opencl-intra-naive")
    kit = b.kit()
    calls, launched = [], []
    sums, kernel = b._sums, kit.kernel
    monkeypatch.setattr(b, "_sums", lambda p, dtype, *a: calls.append((p, dtype)) or
                        sums(p, dtype, *a))
    monkeypatch.setattr(kit, "kernel", lambda src, name, d, **kw: launched.append(d) or
                        kernel(src, name, d, **kw))
    ex = _check(b, pairs, ref)
    pieces = [p for p, dtype in calls if dtype == np.float64]
    if not kit.fp64:                      # the CPU reference recomputes: no float64 program
        assert ex.n_fallback and not pieces
        return
    assert len(pieces) >= 2 and sum(p.n_pairs for p in pieces) == ex.n_fallback
    assert len({b.hap_stride(p.max_hap_length) for p in pieces}) >= 2     # their own differ
    doubles = [d for d in launched if d["USE_DOUBLE"]]
    assert len(doubles) == len(pieces)
    if kit.is_gpu:
        assert [d["HAP_STRIDE"] for d in doubles] == [b.hap_stride(p.max_hap_length)
                                                      for p in pieces]
    else:
        assert {d["HAP_STRIDE"] for d in doubles} == {b.hap_stride(pairs.max_hap_length)}


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_an_unoptimized_cpu_build_gives_the_optimized_builds_bits(device):
    """The tests' backends build their CPU programs without the optimizer (``UNOPTIMIZED``): on
    every device an inter-task (tile 4, sorted) and a warp backend give the optimized programs'
    results to the bit, float32 and the float64 recompute of the underflowing pairs; a GPU builds
    as always."""
    pairs = underflow_pairs()
    ref = _reference(pairs)
    cl = opencl_api.cl_module()
    for name in ("opencl-inter-tile4-sorted", "opencl-warp"):
        runs = [{b.name: b for b in opencl.backends(device=device, unoptimized_on_cpu=flag)}[name]
                for flag in (False, True)]
        optimized, unoptimized = (_check(b, pairs, ref) for b in runs)
        assert optimized.n_fallback >= 1 and unoptimized.n_fallback == optimized.n_fallback
        assert np.array_equal(unoptimized.log10, optimized.log10), (name, device)
        kit = runs[0].kit()
        for b, flag in zip(runs, (False, True)):  # its float32 and float64 programs
            unopt = flag and not kit.is_gpu
            built = [(dict(defines)["USE_DOUBLE"], prg.get_build_info(
                kit.device, cl.program_build_info.OPTIONS))
                for (source, defines, u), prg in kit._programs.items()
                if source == b.source and u == unopt and dict(defines).get("TILE") == b.tile]
            assert {double for double, _ in built} == ({0, 1} if kit.fp64 else {0})
            assert all((opencl_api.OPT_DISABLE in o) == unopt for _, o in built)
        assert runs[1].params["unoptimized_on_cpu"] and "unoptimized_on_cpu" not in runs[0].params


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_empty_pair_set(device):
    pairs = pack([Batch([], [])])
    ex = _backend(device, "opencl-inter-naive").run(pairs)
    assert ex.log10.shape == (0,) and ex.n_fallback == 0


# --- the warp family reports the path it ran ----------------------------------------------------
@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_warp_path_is_reported(device, edge):
    b = _backend(device, "opencl-warp")
    ex = b.run(edge[0])
    kit = b.kit()
    expected = opencl_api.PATH_NAMES[kit.working_shuffle() or "local"]
    # Intel's runtime only: PoCL 5 on the GPU machine's Xeon announces cl_intel_subgroups but the
    # probe finds its sub-groups are not one team wide, so it rightly takes the local path there.
    if kit.shuffle in ("khr", "intel") and kit.required_sub_group \
            and "Intel" in kit.platform.name:
        assert kit.working_shuffle() == kit.shuffle  # Intel's runtime: the shuffle path runs
    assert ex.info["path"] == expected == b.params["path"]
    assert b.params["threads"] == kit.warp_width


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_the_warp_path_is_probed_with_the_programs_the_backend_builds(device, monkeypatch):
    """The shuffle probe (a real warp kernel) is built as the backend builds: an unoptimized
    backend builds no optimized program to choose its path, and its launch on short haplotypes
    reuses the probe's program, so that a call builds one program in all."""
    monkeypatch.setattr(opencl_api, "_KITS", {})  # a fresh kit: nothing built yet
    b = {x.name: x for x in opencl.backends(device=device, **UNOPTIMIZED)}["opencl-warp"]
    kit = b.kit()
    probed = [unopt for (source, defines, unopt) in kit._programs]
    if kit.shuffle in (None, "ptx"):
        assert probed == []
    elif b.path(kit) == "local":
        # the probe failed to build, or built and found sub-groups not one team wide (PoCL 5 on
        # the GPU machine's Xeon announces cl_intel_subgroups)
        assert probed in ([], [not kit.is_gpu])
    else:
        assert probed == [not kit.is_gpu]
    rng = np.random.default_rng(5)
    pairs = pack([Batch([_read(rng, 20), _read(rng, 45)], [_hap(rng, 30), _hap(rng, 64)])])
    _check(b, pairs, _reference(pairs))
    assert [unopt for (source, defines, unopt) in kit._programs] == [not kit.is_gpu]


def test_a_device_with_sub_groups_is_tested_in_ci():
    """CI must exercise the shuffle path: its install script provides Intel's CPU runtime."""
    if not os.environ.get("CI"):
        pytest.skip("only enforced in CI (CI=true), where install_opencl_cpu.sh has run")
    kinds = [opencl_api._shuffle_kind(p, d) for p, d in opencl_api._all_devices()]
    assert any(k in ("khr", "intel") for k in kinds), kinds


# --- device choice ------------------------------------------------------------------------------
@needs_device
def test_device_chosen_by_substring(monkeypatch):
    last = DEVICES[-1]
    monkeypatch.setenv(opencl_api.ENV_DEVICE, last.split(" / ")[-1])
    assert opencl_api._label(*opencl_api.choose_device()) in DEVICES
    b = opencl.backends(device=last)[0]
    assert b.unavailable_reason() is None and b.device_name() == last


@needs_device
@pytest.mark.parametrize("spec", [None, " / "])
def test_a_device_is_chosen_without_building_on_the_devices_after_it(monkeypatch, spec):
    """The default device (and the first of several a name matches) is the first, in its order,
    whose compiler works: the devices after it are never probed (a run on the default device
    compiles nothing on the others); one probed before it is one that failed."""
    monkeypatch.setattr(opencl_api, "_BUILD_ERRORS", {})
    platform, device = opencl_api.choose_device(spec)
    chosen = (platform.int_ptr, device.int_ptr)
    assert opencl_api._BUILD_ERRORS.pop(chosen) is None
    assert all(error for error in opencl_api._BUILD_ERRORS.values())


@needs_device
def test_unknown_device_makes_backends_unavailable(monkeypatch):
    monkeypatch.setenv(opencl_api.ENV_DEVICE, "no-such-device-xyz")
    b = opencl.backends()[0]
    reason = b.unavailable_reason()
    assert reason and "no-such-device-xyz" in reason
    listed = opencl_api.devices()
    assert not any(d.get("selected") for d in listed)
    assert any("no-such-device-xyz" in str(d.get("reason", "")) for d in listed)


@needs_device
def test_a_results_device_details_try_no_build_on_devices_not_built_on(monkeypatch):
    """``devices(probe=False)`` (what a result's device entries are filled from) builds only
    where choosing the default device builds; ``devices()`` (``hmmbench list``) on every
    device."""
    from hmmbench import hostinfo
    tried = []
    real = opencl_api.build_error
    monkeypatch.setattr(opencl_api, "_BUILD_ERRORS", {})
    monkeypatch.setattr(opencl_api, "build_error",
                        lambda p, d: tried.append(opencl_api._label(p, d)) or real(p, d))
    chosen = opencl_api._label(*opencl_api.choose_device())
    before_listing = list(tried)
    used = [{"api": "opencl", "name": chosen}]
    hostinfo.enrich_devices(used, "pairhmm")
    assert used[0]["builds"] == "yes" and used[0]["selected"] is True
    assert set(tried) == set(before_listing)           # nothing built beyond the choice
    listed = [d for d in opencl_api.devices() if "device" in d]
    assert set(tried) == {opencl_api._label(*pd) for pd in opencl_api._all_devices()}
    assert all("builds" in d for d in listed)
    if len(listed) > 1:                                # the choice stops at the first that builds
        assert len(set(before_listing)) < len(listed)


@needs_device
def test_devices_lists_every_platform():
    listed = [d for d in opencl_api.devices() if "device" in d]
    assert [f"{d['platform']} / {d['device']}" for d in listed] == \
        [opencl_api._label(*pd) for pd in opencl_api._all_devices()]
    assert [f"{d['platform']} / {d['device']}" for d in listed if d["builds"] == "yes"] == DEVICES
    assert sum(d["selected"] for d in listed) == 1


@needs_device
def test_a_device_that_cannot_build_is_unavailable_with_the_reason(monkeypatch):
    """PoCL on a CPU its LLVM does not know fails every build: it is listed with the compiler's
    line, never chosen by default, and its backends say why instead of failing each run."""
    platform, device = opencl_api._all_devices()[0]
    key = (platform.int_ptr, device.int_ptr)
    monkeypatch.setitem(opencl_api._BUILD_ERRORS, key, "its OpenCL compiler fails on a trivial "
                        "kernel: error: unknown target CPU 'generic'")
    monkeypatch.setattr(opencl_api, "_KITS", {})
    label = opencl_api._label(platform, device)
    if opencl_api.usable_devices():
        assert opencl_api._label(*opencl_api.choose_device()) != label
        # a name several devices match (" / ": all): the first one that builds
        monkeypatch.setenv(opencl_api.ENV_DEVICE, " / ")
        assert opencl_api._label(*opencl_api.choose_device()) != label
    reason = opencl.backends(device=label)[0].unavailable_reason()
    assert "unknown target CPU 'generic'" in reason and label in reason


# --- no driver needed ---------------------------------------------------------------------------
def test_family_names_mirror_the_cuda_families():
    names = set(FAMILIES)
    for tile in ("naive", "tile2", "tile4", "tile6", "tile8"):
        assert f"opencl-inter-{tile}" in names and f"opencl-inter-{tile}-sorted" in names
    assert {"opencl-intra-naive", "opencl-intra-tile2", "opencl-warp",
            "opencl-multiwarp"} <= names
    assert all(b.api == "opencl" for b in opencl.backends())


def test_kernel_sources_inline_the_shared_header():
    for src in ("pairhmm/inter_task.cl", "pairhmm/wavefront.cl"):
        text = opencl_api.kernel_source(src)
        assert "#include" not in text
        assert text.count("inline void tile_column(") == 1


def test_sorted_interleaved_layout_places_every_base():
    """Reading the arrays the way inter_task.cl does (INTERLEAVED=1) gives back every pair."""
    pairs = edge_pairs()
    lanes = 4
    lay = opencl.sorted_interleaved_layout(pairs, lanes)
    a = lay.arrays
    codes = opencl.read_codes(pairs)
    assert lay.n_slots % lanes == 0 and sorted(lay.order[lay.order >= 0]) == list(range(pairs.n_pairs))
    m_sorted = a["pair_m"][: pairs.n_pairs]
    assert np.all(np.diff(m_sorted) >= 0)  # the CUDA twin's order: shortest reads first
    reads = a["read_codes"].reshape(-1)
    hap_bytes = a["hap_data"].view(np.uint8).reshape(-1)
    for slot, p in enumerate(lay.order):
        if p < 0:
            assert a["pair_m"][slot] == 0
            continue
        g, lane = divmod(slot, lanes)
        m, n = pairs.pair_read_lengths[p], pairs.pair_hap_lengths[p]
        assert a["pair_m"][slot] == m and a["pair_n"][slot] == n
        rows = reads[(a["read_start"][g] + np.arange(m)) * lanes + lane]
        r0 = pairs.read_offsets[pairs.pair_read[p]]
        assert np.array_equal(rows, codes[r0:r0 + m])
        j = np.arange(n)
        words = (a["hap_start"][g] + j // 4) * lanes + lane
        assert np.array_equal(hap_bytes[words * 4 + j % 4], pairs.hap(pairs.pair_hap[p]))


def test_cuda_and_opencl_place_sorted_pairs_identically():
    """One layout step for both APIs: same slot order, groups and haplotype words."""
    from hmmbench.pairhmm.intertask import cuda
    pairs = edge_pairs()
    cl_lay = opencl.sorted_interleaved_layout(pairs, 32)
    cu_arrays, cu_order = cuda.interleaved_arrays(pairs)
    assert np.array_equal(cl_lay.order, cu_order)
    assert np.array_equal(cl_lay.arrays["hap_data"], cu_arrays["hap4"])
    assert np.array_equal(cl_lay.arrays["read_start"], cu_arrays["group_row"])
    assert np.array_equal(cl_lay.arrays["read_codes"] & 7, cu_arrays["read_il"])


def test_read_codes_pack_base_and_qualities():
    pairs = edge_pairs()
    c = opencl.read_codes(pairs)
    assert np.array_equal(c & 7, pairs.read_bases)
    assert np.array_equal((c >> 3) & 127, pairs.base_qual)
    assert np.array_equal((c >> 10) & 127, pairs.ins_qual)
    assert np.array_equal((c >> 17) & 127, pairs.del_qual)
    assert np.array_equal((c >> 24) & 127, pairs.gcp_qual)


def test_module_imports_and_reports_without_pyopencl():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pyopencl' or name.startswith('pyopencl.'):\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from hmmbench.pairhmm.intertask import opencl\n"
        "bs = opencl.backends()\n"
        "print(bs[0].unavailable_reason())\n"
        "print(opencl.devices()[0]['reason'])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["pyopencl not installed", "pyopencl not installed"]
