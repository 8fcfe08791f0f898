"""opencl-subwarp-f64rescue backends on this machine's OpenCL devices, built once per (device,
exchange path, bins) for the whole test session (their programs stay compiled). On these CPU
devices their bin programs build without the optimizer (``UNOPTIMIZED``: the same bits, checked
in test_opencl.py, at a tenth of the compile time)."""
from __future__ import annotations

import pytest

from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm.subwarp.opencl import SubwarpOpenCL


def _device_labels() -> list:
    try:
        return [opencl_api._label(p, d) for p, d in opencl_api.usable_devices()]
    except ImportError:
        return []


DEVICES = _device_labels()
needs_device = pytest.mark.skipif(not DEVICES, reason="no usable OpenCL device (pyopencl or an "
                                  "ICD missing; scripts/install_opencl_cpu.sh installs CPU ones)")
#: Bins with k <= 8 (cheap to build on CPUs: the registered k = 16..32 bins take seconds each),
#: every group size, a multi-tile tail; the edge cases, 10s and 1m share their programs.
TEST_BINS = ((16, 4, 4), (64, 8, 8), (128, 16, 8), (256, 32, 8))
TEST_LONG = (8, 8)
#: The tests' backends' ``unoptimized_on_cpu``: their CPU builds cost 10-40x their runs.
UNOPTIMIZED = {"unoptimized_on_cpu": True}
_BACKENDS: dict = {}


def bin_build_options(b: SubwarpOpenCL) -> list:
    """The build options of the programs behind ``b``'s bin kernels (its last call's), as its
    device's runtime reports them."""
    cl = opencl_api.cl_module()
    return [launch.kernel.get_info(cl.kernel_info.PROGRAM).get_build_info(
        b.kit().device, cl.program_build_info.OPTIONS) for launch, _ in b._bin_kernels.values()]


def backend(device: str, exchange: str, registered: bool = False) -> SubwarpOpenCL:
    """One backend per (device, path, bins) for the module (programs stay compiled): the test
    bins, or the registered ones (as cuda-subwarp's)."""
    key = (device, exchange, registered)
    if key not in _BACKENDS:
        kw = {} if registered else dict(bins=TEST_BINS, long_config=TEST_LONG, small_tiers=None)
        b = SubwarpOpenCL("opencl-subwarp-f64rescue", device=device, exchange=exchange,
                          **UNOPTIMIZED, **kw)
        reason = b.unavailable_reason()
        if reason:
            pytest.skip(f"opencl-subwarp-f64rescue on {device}: {reason}")
        _BACKENDS[key] = b
    return _BACKENDS[key]
