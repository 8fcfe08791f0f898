"""profile-opencl-warp (the warp-group kernels of profile-cuda-warp in OpenCL) on the CPU OpenCL
devices: HMMER's raw integers (SSV xE, full-MSV xJ, Viterbi-filter xC) identical to the
task-parallel kernels' (themselves identical to HMMER, tests/test_profile_opencl.py), the full MSV
forced on every sequence, on the device's sub-group path and on the local-memory path, for the
proteins that hold the proteome's cases (every 10th, each one whose SSV, MSV or VF overflows on
the default device's task kernels, the longest and the shortest) and edge lengths; the scores
through the registry are checked against profile-numpy by tests/test_profile_backends.py like
every backend's."""
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
#: raw integers per (device, kernels, input): the task kernels' once per device and input; the
#: warp kernels' once per path and block, so "auto" on a device without a 32-lane sub-group
#: (it takes the local path: the same program, the same launch) shares the "local" result
_RAW: dict = {}


def _runner(device: str, exchange: str, unoptimized: bool = False):
    key = (device, exchange, unoptimized)
    if key not in _RUNNERS:
        _RUNNERS[key] = (ProfileWarpOpenCL(device, exchange, unoptimized_on_cpu=unoptimized)
                         if exchange else ProfileFiltersOpenCL(device))
        _RUNNERS[key]._clock = StageClock()
    return _RUNNERS[key]


def _raw(runner, model, seqs, ssv_runner=None) -> dict:
    """SSV xE, full-MSV xJ and VF xC of every sequence (the MSV on all, not only SSV's
    undecided); the SSV with ``ssv_runner`` where given."""
    L = seqs.lengths
    order = launch_order(seqs)
    bp = model.byte
    tjbm = ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8)
    return {"ssv": (ssv_runner or runner).ssv_xe(model, seqs, order),
            "msv": runner.msv_xj(model, seqs, order, tjbm),
            "vf": runner.vf_xc(model, seqs, order, model.word.move(L).astype(np.int16))}


def _task_raw(device: str, name: str, model, seqs) -> dict:
    if (device, "task", name) not in _RAW:
        _RAW[device, "task", name] = _raw(_runner(device, ""), model, seqs)
    return _RAW[device, "task", name]


def _overflows(raw: dict, model) -> dict:
    """Which sequences overflow each filter (SSV xE >= 255 - bias, MSV xJ -1, VF xC 32768)."""
    return {"ssv": raw["ssv"] >= 255 - model.byte.bias, "msv": raw["msv"] < 0,
            "vf": raw["vf"] >= 32768}


@pytest.fixture(scope="module")
def default_device():
    """The device that runs the optimized SSV/MSV programs (the product's own) and whose task
    kernels say which proteins hold the proteome's cases: the one hmmbench picks by default."""
    label = opencl_api._label(*opencl_api.choose_device())
    return label if label in DEVICES else DEVICES[0]


@pytest.fixture(scope="module")
def proteome_cases(model, proteome, default_device):
    """The proteins that hold the proteome's cases: every 10th, each one whose SSV, MSV or VF
    overflows (the task kernels on the default device say which), the longest and the
    shortest."""
    over = _overflows(_task_raw(default_device, "proteome", model, proteome), model)
    L = proteome.lengths
    keep = set(range(0, len(proteome), 10)) | {int(np.argmax(L)), int(np.argmin(L))}
    for flags in over.values():
        keep |= set(np.nonzero(flags)[0].tolist())
    sub = proteome.subset(sorted(keep))
    assert sub.lengths.max() == L.max() and sub.lengths.min() == L.min()
    return sub


@needs_device
@pytest.mark.parametrize("exchange", ["auto", "local"])
@pytest.mark.parametrize("device", DEVICES)
def test_raw_integers_equal_the_task_kernels_on_the_proteome_and_edges(
        device, exchange, model, proteome, default_device, proteome_cases):
    # the SSV program optimizer-free on the devices but the default one (PoCL builds it in
    # 0.3 s against 2 s; the same bits:
    # tests/profile/test_batch.py::test_unoptimized_batch_programs_give_the_same_bits); the MSV
    # and VF programs optimized everywhere (optimizer-free, they run the proteome's cases and
    # the edges slower than PoCL builds them)
    warp_runner = _runner(device, exchange)
    ssv_runner = _runner(device, exchange, unoptimized=device != default_device)
    if exchange == "local":
        assert warp_runner.path == "local" and warp_runner.block == 32
    assert ssv_runner.path == warp_runner.path
    for name, seqs in (("proteome cases", proteome_cases), ("edges", edge_set(proteome))):
        want = _task_raw(device, name, model, seqs)
        key = (device, warp_runner.path, warp_runner.block, name)
        if key not in _RAW:
            _RAW[key] = _raw(warp_runner, model, seqs, ssv_runner=ssv_runner)
        got = _RAW[key]
        for kind in ("ssv", "msv", "vf"):
            assert np.array_equal(got[kind], want[kind]), (kind, warp_runner.path, name)
        if name.startswith("proteome"):     # each filter's overflows, and results that are not
            over = _overflows(want, model)
            assert all(f.any() and not f.all() for f in over.values()), name
    assert (want["msv"] >= 0).any() and (want["vf"] < 32768).any()   # edges: not all overflows


@needs_device
@pytest.mark.parametrize("over", [{"row_inplace": 1, "vf_ntsc_mask": 0x07},
                                  {"vf_ntsc_mask": 0x70}], ids=["inplace-mask07", "mask70"])
def test_row_and_floor_variants_equal_the_task_kernels(over, model, proteome, proteome_cases,
                                                       default_device):
    """ROW_INPLACE (descending in-place rows, three-way VF maxima) and VF_NTSC_MASK (some VF
    transition floors by ALU) through the kernel source itself, on the default device's
    local-memory path (Intel's runtime builds it in 0.2-0.4 s, PoCL in 2-3 s): raw integers
    identical to the task kernels' on the proteome's cases (every 10th protein, the overflows,
    the longest and shortest) and the edge lengths."""
    device = default_device
    runner = ProfileWarpOpenCL(device, "local")
    runner._clock = StageClock()
    runner.variant = {**warp.TUNED_VARIANT, **over}
    for name, seqs in (("proteome cases", proteome_cases), ("edges", edge_set(proteome))):
        want, got = _task_raw(device, name, model, seqs), _raw(runner, model, seqs)
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
