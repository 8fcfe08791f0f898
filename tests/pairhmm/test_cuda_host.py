"""CUDA backends without a GPU: registration, availability, host layouts, nvcc compile-check."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from hmmbench.pairhmm.intertask import layout as layouts
from hmmbench.pairhmm.intertask import cuda
from hmmbench.apis import cuda as cuda_api
from hmmbench.pairhmm.datasets.synthetic import generate_fixed
from hmmbench.pairhmm.model import Batch, Read, pack
from helpers import nvcc_batch
from helpers.pairgen import ragged_pairs

EXPECTED_NAMES = {
    "cuda-inter-naive", "cuda-inter-tile2", "cuda-inter-tile4", "cuda-inter-tile6",
    "cuda-inter-tile8", "cuda-inter-naive-sorted", "cuda-inter-tile2-sorted",
    "cuda-inter-tile4-sorted", "cuda-inter-tile6-sorted", "cuda-inter-tile8-sorted",
    "cuda-intra-naive", "cuda-intra-tile2", "cuda-warp", "cuda-multiwarp", "cuda-warp-tile4"}


def test_every_family_is_registered_once():
    names = [b.name for b in cuda.backends()]
    assert set(names) == EXPECTED_NAMES and len(names) == len(set(names))
    for b in cuda.backends():
        assert b.api == "cuda" and b.family and b.params


def test_unavailable_without_pycuda_says_why():
    try:
        import pycuda  # noqa: F401
    except ImportError:
        for b in cuda.backends():
            assert "pycuda not installed" in b.unavailable_reason()
        assert cuda_api.devices()[0]["available"] is False
    else:
        pytest.skip("pycuda is installed here")


def test_position_probs_field_order():
    pairs = ragged_pairs()
    p7 = cuda.position_probs(pairs)
    pr = pairs.probs
    assert p7.shape == (len(pairs.read_bases), 7) and p7.dtype == np.float32
    np.testing.assert_allclose(p7[:, 0], pr.match, rtol=1e-6)
    np.testing.assert_allclose(p7[:, 3], pr.gm, rtol=1e-6)
    np.testing.assert_allclose(p7[:, 6], pr.dd, rtol=1e-6)  # ii = dd by the model


def test_dataset_order_arrays_point_at_each_pair():
    pairs = ragged_pairs()
    a = cuda.dataset_order_arrays(pairs)
    for p in range(pairs.n_pairs):
        m, n = a["pair_m"][p], a["pair_n"][p]
        np.testing.assert_array_equal(a["read_bases"][a["pair_read"][p]:][:m],
                                      pairs.read(pairs.pair_read[p]))
        np.testing.assert_array_equal(a["hap_bases"][a["pair_hap"][p]:][:n],
                                      pairs.hap(pairs.pair_hap[p]))


@pytest.mark.parametrize("chunk_rows", [8192, 7])  # 7: many chunks on several threads
@pytest.mark.parametrize("make", [ragged_pairs, lambda: generate_fixed(7, 9, 45, 1)])
def test_interleaved_layout_round_trips(make, chunk_rows, monkeypatch):
    """Reading the interleaved arrays the way the kernel does gives back every pair."""
    monkeypatch.setattr(layouts, "GATHER_CHUNK_ROWS", chunk_rows)
    pairs = make()
    a, order = cuda.interleaved_arrays(pairs)
    P = pairs.n_pairs
    assert len(order) % 32 == 0 and sorted(order[order >= 0]) == list(range(P))
    assert (order[P:] == -1).all() and (a["pair_m"][P:] == 0).all()
    keys = np.stack([pairs.pair_read_lengths[order[:P]], pairs.pair_hap_lengths[order[:P]]], 1)
    assert (np.diff(keys[:, 0]) >= 0).all()  # sorted by read length, then haplotype length
    same = np.diff(keys[:, 0]) == 0
    assert (np.diff(keys[:, 1])[same] >= 0).all()
    probs = cuda.position_probs(pairs)
    hap_bytes = a["hap4"].view(np.uint8).reshape(-1, 32, 4)
    for slot in range(P):
        p, g, lane = order[slot], slot // 32, slot % 32
        m, n = a["pair_m"][slot], a["pair_n"][slot]
        rows = a["group_row"][g] + np.arange(m)
        read = pairs.pair_read[p]
        np.testing.assert_array_equal(a["read_il"][rows, lane], pairs.read(read))
        lo = pairs.read_offsets[read]
        np.testing.assert_array_equal(a["probs_il"][rows, :, lane], probs[lo:lo + m])
        cols = a["group_hap4"][g] + np.arange(n) // 4
        np.testing.assert_array_equal(hap_bytes[cols, lane, np.arange(n) % 4],
                                      pairs.hap(pairs.pair_hap[p]))


@pytest.mark.parametrize("vec", [1, 2, 4])
def test_inter_layout_sizes_row_vectors_per_warp_group(vec):
    pairs = ragged_pairs()
    b = cuda.InterTask(4, sorted_layout=False, vec=vec)
    lay = b.layout(pairs)
    blocks = -(-layouts.group_max(lay.arrays["pair_n"], 32) // vec) + 1
    assert lay.scratch["vec_m"] == int(blocks.sum()) * 32 * vec * 4
    np.testing.assert_array_equal(np.diff(lay.arrays["group_block"]), blocks[:-1])


def test_wavefront_pass_buffers_only_for_long_reads():
    pairs = ragged_pairs()
    b = cuda.Wavefront("t", "intra-task", threads=32)
    lay = b.layout(pairs)
    long_reads = lay.arrays["pair_m"] > 32
    assert lay.scratch["pass_m"] == int(lay.arrays["pair_n"][long_reads].sum()) * 4


def test_refuses_empty_read_or_haplotype():
    pairs = pack([Batch([Read(b"", b"", b"", b"", b"")], [b"ACGT"])])
    for b in cuda.backends()[:1]:
        assert "empty read" in b.refuse_reason(pairs)


NVCC = shutil.which("nvcc")
#: each source's kernel and its ``extern __shared__`` arrays (renamed per specialization when
#: several go through one nvcc call)
ENTRIES = {"pairhmm/inter_task.cu": ("inter_task",), "pairhmm/wavefront.cu": ("wavefront", "pass_sh")}


@pytest.fixture(scope="module")
def built_together(tmp_path_factory):
    """ptxas' log of each specialization's entry, the specializations of a source through one
    nvcc call per CPU (helpers.nvcc_batch: the headers parsed once per call, not per
    specialization); None for those of a call that failed."""
    specs = cuda.specializations()
    folder = tmp_path_factory.mktemp("nvcc")
    logs: dict = {}
    for source, names in ENTRIES.items():
        mine = [i for i, (s, _) in enumerate(specs) if s == source]
        logs.update(zip(mine, nvcc_batch.compile_each(source, [specs[i][1] for i in mine], names,
                                                      names[0], folder / names[0])))
    return logs


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
@pytest.mark.parametrize("index,source,defines", [(i, s, d) for i, (s, d) in
                                                   enumerate(cuda.specializations())],
                         ids=[f"{s}:{','.join(f'{k}={v}' for k, v in sorted(d.items()))}"
                              for s, d in cuda.specializations()])
def test_kernel_compiles_for_sm90(index, source, defines, built_together, tmp_path):
    """ptxas built this specialization's entry in the shared call; where that call failed, the
    specialization is built alone, so the failure names its own define set."""
    assert source in ENTRIES, source
    log = built_together[index]
    if log is None:
        cmd = [NVCC, "-arch=sm_90", "--cubin", *cuda_api.BASE_OPTIONS,
               *cuda_api.define_flags(defines), "-I", cuda_api.kernel_dir(), "-I",
               cuda_api.common_kernel_dir(), "-o", str(tmp_path / "k.cubin"),
               f"{cuda_api.kernel_dir()}/{source}"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        pytest.fail(f"{source} {defines}: builds alone, not beside the other specializations")
    assert "registers" in log, log


def test_in_pair_order_puts_slots_back_and_drops_padding():
    order = np.array([2, -1, 0, 1, -1])
    out = layouts.in_pair_order(np.array([20., 99., 0., 10., 99.]), order, 3)
    np.testing.assert_array_equal(out, [0., 10., 20.])
    same = np.array([1., 2.])
    assert layouts.in_pair_order(same, None, 2) is same
