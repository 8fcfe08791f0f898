"""HMMBENCH_SUBWARP_EXTRA_WORK, the gate's own slowdown on a GPU: the define reaches both APIs'
kernels (and their caches), the records show it, a bad value is a usage error, and the kernel
body with it runs the same pairs to the same bits (executed on the OpenCL CPU devices here)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hmmbench.apis import cuda as glue
from hmmbench.errors import UserError
from hmmbench.pairhmm import datasets
from hmmbench.pairhmm.subwarp import cuda as sw
from hmmbench.pairhmm.subwarp import variants as swv
from hmmbench.pairhmm.subwarp import extra_work
from hmmbench.pairhmm.subwarp.layout import Bin
from hmmbench.pairhmm.subwarp.opencl import SubwarpOpenCL
from helpers.opencl_subwarp import DEVICES, TEST_BINS, TEST_LONG, UNOPTIMIZED, needs_device

BIN = Bin(1, 64, 8, 8)


def test_the_define_reaches_the_cuda_kernels_and_the_records(monkeypatch):
    b = sw.SubwarpBackend("cuda-subwarp")
    monkeypatch.delenv(extra_work.ENV, raising=False)
    plain = b.defines(BIN)
    assert "SW_EXTRA_WORK" not in plain and extra_work.PARAM not in b.params
    monkeypatch.setenv(extra_work.ENV, "10")
    slowed = b.defines(BIN)
    assert slowed == {**plain, "SW_EXTRA_WORK": 10}
    assert "-DSW_EXTRA_WORK=10" in glue.define_flags(slowed)
    assert b.params[extra_work.PARAM] == 10 and b.name == "cuda-subwarp"
    for kind in (sw.DOUBLE, sw.EXP):       # the recompute kernels do the extra work too
        assert b.defines(BIN, kind)["SW_EXTRA_WORK"] == 10
    monkeypatch.delenv(extra_work.ENV)
    assert extra_work.PARAM not in b.params   # a later run without it records none


def test_the_define_reaches_the_opencl_kernels(monkeypatch):
    b = SubwarpOpenCL("opencl-subwarp", bins=TEST_BINS, long_config=TEST_LONG, small_tiers=None)
    monkeypatch.setenv(extra_work.ENV, "25")
    assert b._defines(BIN, "local", 128, False)["SW_EXTRA_WORK"] == 25
    assert b.params[extra_work.PARAM] == 25


@pytest.mark.parametrize("text", ["abc", "-1", "101", "1.5"])
def test_a_bad_value_is_a_usage_error(monkeypatch, text):
    monkeypatch.setenv(extra_work.ENV, text)
    with pytest.raises(UserError, match=extra_work.ENV):
        extra_work.extra_work_pct()


def test_the_kernel_body_reads_the_define():
    """The shared body declares the default and the CUDA spelling never queues a pair twice."""
    text = (Path(glue.common_kernel_dir()) / "pairhmm" / "subwarp.h").read_text()
    assert "#define SW_EXTRA_WORK 0" in text and "n_items * SW_EXTRA_WORK / 100" in text
    assert "if (!SW_REDONE)" in glue.kernel_source(sw.SOURCE)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_cuda_kernel_builds_with_it_under_the_same_register_budget(monkeypatch, tmp_path):
    """cuda-subwarp's equal-512 bin (the gate-gpu suite's) with 10 % extra work: nvcc builds it
    (the queue macro's guard included) and it keeps the bin's 240-register cap, so the suite
    times more work, not another register budget."""
    b = swv.backends()[0]
    (x,) = [x for x in sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 512) if x.hi == 512]
    used = {}
    for pct in ("", "10"):
        monkeypatch.setenv(extra_work.ENV, pct)
        log = glue.nvcc_cubin(sw.SOURCE, b.defines(x), tmp_path / f"k{pct}.cubin")
        used[pct] = glue.ptxas_resources(log, "subwarp_forward")["registers"]
    assert used[""] == used["10"] == x.max_regs == 240


@needs_device
def test_extra_work_gives_the_same_bits(monkeypatch):
    """Every item of a launch aligned a second time (100 %): the same results as without, to
    the bit (the smallest single-tile bin, p4k4, the only one both backends have: the programs
    of a new define build slowly on a CPU)."""
    pairs = datasets.resolve("equal-16@40").load()
    assert set(pairs.pair_read_lengths.tolist()) == {16}

    def one_bin():
        return SubwarpOpenCL("opencl-subwarp-f64rescue", device=DEVICES[0], exchange="auto",
                             bins=((16, 4, 4),), long_config=None, small_tiers=None,
                             **UNOPTIMIZED)
    monkeypatch.delenv(extra_work.ENV, raising=False)
    plain = one_bin()
    want = plain.run(pairs).log10
    monkeypatch.setenv(extra_work.ENV, "100")
    slowed = one_bin()
    assert np.array_equal(slowed.run(pairs).log10, want, equal_nan=True)
    assert slowed.params[extra_work.PARAM] == 100
