"""profile-opencl-warp (the warp-group kernels of profile-cuda-warp in OpenCL) on the CPU OpenCL
devices: HMMER's raw integers (SSV xE, full-MSV xJ, Viterbi-filter xC) identical to the
task-parallel kernels' (themselves identical to HMMER, tests/test_profile_opencl.py) for every
protein of the proteome, the full MSV forced on all of them, on the device's sub-group path and
on the local-memory path; edge lengths; the scores through the registry are checked against
profile-numpy by tests/test_profile_backends.py like every backend's."""
import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from hmmbench.apis import opencl as opencl_api  # noqa: E402
from hmmbench.backend import StageClock  # noqa: E402
from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.device import warp  # noqa: E402
from hmmbench.profile.device.host import launch_order  # noqa: E402
from hmmbench.profile.model import ProfileModel, SequenceSet  # noqa: E402
from hmmbench.profile.device.opencl import OpenCLProfile, ProfileFiltersOpenCL, ProfileWarpOpenCL  # noqa: E402,E501


def _device_labels() -> list:
    return [opencl_api._label(p, d) for p, d in opencl_api.usable_devices()]


DEVICES = _device_labels()
needs_device = pytest.mark.skipif(not DEVICES, reason="no usable OpenCL device")


@pytest.fixture(scope="module")
def model():
    path = [p for p in datasets.model_files() if p.endswith("PF02826.hmm")][0]
    return ProfileModel.from_hmm(datasets.read_hmms(path)[0])   # M = 178: groups of 16


@pytest.fixture(scope="module")
def proteome():
    return datasets.load_proteome()


def edge_set(proteome) -> SequenceSet:
    """Lengths 0, 1, 2, one under / at / over a group (16) and a warp (32), one very long (all
    proteins of the proteome back to back): prefetch tails, warps of one sequence, empty slots."""
    rng = np.random.default_rng(5)
    lengths = [0, 1, 2, 15, 16, 17, 31, 32, 33, 0, 7, 2000]
    seqs = [rng.integers(0, 20, n).astype(np.uint8) for n in lengths]
    seqs.append(proteome.residues[:60_000])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in seqs])])
    return SequenceSet([f"s{i}" for i in range(len(seqs))], np.concatenate(seqs), offsets)


_RUNNERS: dict = {}
_TASK_RAW: dict = {}


def _runner(device: str, exchange: str):
    key = (device, exchange)
    if key not in _RUNNERS:
        _RUNNERS[key] = (ProfileWarpOpenCL(device, exchange) if exchange
                         else ProfileFiltersOpenCL(device))
        _RUNNERS[key]._clock = StageClock()
    return _RUNNERS[key]


def _raw(runner, model, seqs) -> dict:
    """SSV xE, full-MSV xJ and VF xC of every sequence (the MSV on all, not only SSV's undecided)."""
    L = seqs.lengths
    order = launch_order(seqs)
    bp = model.byte
    tjbm = ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8)
    return {"ssv": runner.ssv_xe(model, seqs, order),
            "msv": runner.msv_xj(model, seqs, order, tjbm),
            "vf": runner.vf_xc(model, seqs, order, model.word.move(L).astype(np.int16))}


@needs_device
@pytest.mark.parametrize("exchange", ["auto", "local"])
@pytest.mark.parametrize("device", DEVICES)
def test_raw_integers_equal_the_task_kernels_on_the_proteome_and_edges(device, exchange, model,
                                                                        proteome):
    warp_runner = _runner(device, exchange)
    if exchange == "local":
        assert warp_runner.path == "local" and warp_runner.block == 32
    for name, seqs in (("proteome", proteome), ("edges", edge_set(proteome))):
        if (device, name) not in _TASK_RAW:   # the task kernels' side, once for both exchanges
            _TASK_RAW[device, name] = _raw(_runner(device, ""), model, seqs)
        want, got = _TASK_RAW[device, name], _raw(warp_runner, model, seqs)
        for kind in ("ssv", "msv", "vf"):
            assert np.array_equal(got[kind], want[kind]), (kind, warp_runner.path)
    assert (want["msv"] >= 0).any() and (want["vf"] < 32768).any()   # not all overflows


@needs_device
@pytest.mark.parametrize("over", [{"row_inplace": 1, "vf_ntsc_mask": 0x07},
                                  {"vf_ntsc_mask": 0x70}], ids=["inplace-mask07", "mask70"])
def test_row_and_floor_variants_equal_the_task_kernels(over, model, proteome):
    """ROW_INPLACE (descending in-place rows, three-way VF maxima) and VF_NTSC_MASK (some VF
    transition floors by ALU) through the kernel source itself, on the first device: raw
    integers identical to the task kernels' on every 10th protein and the edge lengths."""
    device = DEVICES[0]
    runner = ProfileWarpOpenCL(device, "auto")
    runner._clock = StageClock()
    runner.variant = {**warp.TUNED_VARIANT, **over}
    for seqs in (proteome.subset(range(0, len(proteome), 10)), edge_set(proteome)):
        want, got = _raw(_runner(device, ""), model, seqs), _raw(runner, model, seqs)
        for kind in ("ssv", "msv", "vf"):
            assert np.array_equal(got[kind], want[kind]), (kind, over)


@needs_device
@pytest.mark.parametrize("device", DEVICES)
def test_the_sub_group_path_runs_where_the_device_has_sub_groups(device):
    r = _runner(device, "auto")
    kit = r.kit
    # Intel's runtime only: PoCL 5 announces cl_intel_subgroups, but its sub-groups are not one
    # warp wide (the probe build), so it rightly takes the local path
    if kit.shuffle in ("khr", "intel") and kit.required_sub_group \
            and "Intel" in kit.platform.name:
        assert r.path == kit.shuffle and r.block == 128
    else:
        assert r.path in (kit.shuffle, "local")


def test_registered_beside_its_cuda_twin_with_the_same_variant():
    from hmmbench.profile.device import cuda, opencl
    names = {b.name: b for b in opencl.backends()}
    b = names["profile-opencl-warp"]
    assert isinstance(b, OpenCLProfile) and b.family == "warp-group" and b.api == "opencl"
    assert cuda.TUNED_VARIANT is warp.TUNED_VARIANT
    assert "profile-cuda-warp" in {x.name for x in cuda.backends()}
