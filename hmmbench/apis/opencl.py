"""PyOpenCL host glue shared by every OpenCL backend of every workload: platforms and devices
(``HMMBENCH_OPENCL_DEVICE``), one :class:`DeviceKit` per device (context, profiling queue, program
cache keyed on the whole source text, capabilities such as fp64 and sub-group shuffles), and the
kernel sources under ``kernels_opencl/`` with their headers inlined.
"""
from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import UserError

ENV_DEVICE = "HMMBENCH_OPENCL_DEVICE"
#: Where scripts/install_opencl_cpu.sh lists the ICDs it installed (beside the system's).
VENDORS_SUBDIR = ("etc", "OpenCL", "hmmbench-vendors")
#: Device memory a GPU's OpenCL driver takes for a process's context, queue and kernel builds,
#: beyond the buffers: the first call's device peak less its buffers was 518-527 MiB on an H200
#: (NVIDIA's driver 580; pair-HMM and profile backends, hmmbench.memory_peak's device measure,
#: docs/working-memory.md). A GPU's OpenCL estimates add it: the run checks them against the
#: device's whole memory, before any context exists.
GPU_CONTEXT_BYTES = 560 << 20
#: Values of the EXCHANGE define of wavefront.cl.
EXCHANGE = {"local": 0, "khr": 1, "intel": 2, "ptx": 3, "khr-indexed": 4}
PATH_NAMES = {"local": "local-memory", "khr": "sub-group shuffle (cl_khr_subgroup_shuffle_relative)",
              "intel": "sub-group shuffle (cl_intel_subgroups)",
              "ptx": "inline PTX shfl.sync (NVIDIA OpenCL)",
              "khr-indexed": "sub-group shuffle (cl_khr_subgroup_shuffle)"}


# ------------------------------------------------------------------------------------------------
# Platforms, devices, contexts, programs
# ------------------------------------------------------------------------------------------------
def _default_icd_vendors() -> None:
    """Use the vendors folder the install script made in this environment, unless told otherwise."""
    if "OCL_ICD_VENDORS" not in os.environ:
        folder = Path(sys.prefix, *VENDORS_SUBDIR)
        if folder.is_dir():
            os.environ["OCL_ICD_VENDORS"] = str(folder)


#: Set (to "1", as ``hmmbench --verbose`` does): pyopencl shows the compilers' build logs.
VERBOSE_ENV = "PYOPENCL_COMPILER_OUTPUT"
#: the build option of the tests' unoptimized CPU programs (``DeviceKit.program``'s
#: ``unoptimized``): on the CPU runtimes here a program builds up to 10-70x faster without the
#: optimizer and gives the optimized program's bits, but runs several times slower
OPT_DISABLE = "-cl-opt-disable"


_CL: list = []  # pyopencl, imported on first use
_QUIET = ("ignore", None)  # warnings.filters' entry of filterwarnings("ignore", category=...)


def cl_module():
    if not _CL:
        _default_icd_vendors()
        import pyopencl  # noqa: PLC0415 - optional dependency, imported on first use
        _CL.append(pyopencl)
    cl = _CL[0]
    # A build that succeeds with a log ("kernel was vectorized") is no news; a failed build still
    # raises. Only pyopencl's CompilerWarning category is silenced; when that filter is already
    # the first, nothing more is looked up (a call's launches ask for the module often).
    if (warnings.filters[0] if warnings.filters else None) != _QUIET + (cl.CompilerWarning,
                                                                         None, 0) \
            and os.environ.get(VERBOSE_ENV, "0") in ("", "0"):
        warnings.filterwarnings("ignore", category=cl.CompilerWarning)
    return cl


def _all_devices() -> list:
    """(platform, device) for every device of every platform; [] when there is no platform."""
    cl = cl_module()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    out = []
    for p in platforms:
        try:
            out.extend((p, d) for d in p.get_devices())
        except cl.Error:
            continue
    return out


#: a kernel every OpenCL C compiler must build: devices whose compiler fails on it are unusable
PROBE_SOURCE = "__kernel void probe(__global float *x) { x[get_global_id(0)] += 1.0f; }"
_BUILD_ERRORS: dict = {}


def build_error(platform, device) -> Optional[str]:
    """None when the device's compiler builds a trivial kernel, else why not in one line. PyPI's
    PoCL fails this way on CPUs its LLVM does not know (AMD Zen 5: "unknown target CPU
    'generic'"); such a device is listed with the reason and never chosen by default."""
    key = (platform.int_ptr, device.int_ptr)
    if key not in _BUILD_ERRORS:
        cl = cl_module()
        try:
            cl.Program(cl.Context([device]), PROBE_SOURCE).build()
            _BUILD_ERRORS[key] = None
        except Exception as exc:  # noqa: BLE001 - any build failure: the device is unusable
            lines = [ln.strip() for ln in str(exc).splitlines() if "error" in ln.lower()]
            detail = next((ln for ln in lines if not ln.startswith("clBuildProgram")), None)
            _BUILD_ERRORS[key] = ("its OpenCL compiler fails on a trivial kernel: "
                                  f"{detail or (lines[0] if lines else exc)}")
    return _BUILD_ERRORS[key]


def usable_devices() -> list:
    """(platform, device) of every device whose compiler works."""
    return [pd for pd in _all_devices() if build_error(*pd) is None]


def _label(platform, device) -> str:
    return f"{platform.name.strip()} / {device.name.strip()}"


def _is_gpu(device) -> bool:
    return bool(device.type & cl_module().device_type.GPU)


def choose_device(spec: Optional[str] = None):
    """The (platform, device) named by ``spec`` or $HMMBENCH_OPENCL_DEVICE, else the default."""
    found = _all_devices()
    if not found:
        raise RuntimeError("no OpenCL platform or device found")
    spec = spec if spec is not None else os.environ.get(ENV_DEVICE, "")
    if spec:
        hits = [pd for pd in found if spec.lower() in _label(*pd).lower()]
        if not hits:
            raise UserError(f"no OpenCL device matches '{spec}' (devices: "
                            + "; ".join(_label(*pd) for pd in found) + ")")
        # the first that builds: PyPI's and Debian's PoCL may both match "Portable"
        return _first_that_builds(hits)
    # GPUs first; then devices with sub-group shuffles (on CPUs: Intel's runtime, which also
    # vectorizes the inter-task kernels far better than PyPI's PoCL); then platform order.
    return _first_that_builds(sorted(found, key=lambda pd: (not _is_gpu(pd[1]),
                                                            _shuffle_kind(*pd) is None)))


def _first_that_builds(ranked: list):
    """The first of ``ranked`` whose compiler works, else the first. Only the devices before it
    are probed: a process that uses the chosen device compiles nothing on the others."""
    return next((pd for pd in ranked if build_error(*pd) is None), ranked[0])


def _shuffle_kind(platform, device) -> Optional[str]:
    exts = set(device.extensions.split())
    if "cl_khr_subgroup_shuffle_relative" in exts:
        return "khr"
    if "cl_intel_subgroups" in exts:
        return "intel"
    if "cl_khr_subgroup_shuffle" in exts and "cl_khr_subgroups" in exts:
        return "khr-indexed"
    if "NVIDIA" in platform.name.upper():
        return "ptx"
    return None


def kernel_dir() -> Path:
    import kernels_opencl  # noqa: PLC0415
    return Path(kernels_opencl.__file__).resolve().parent


def common_kernel_dir() -> Path:
    """Headers written once for both APIs (``kernels_common``)."""
    import kernels_common  # noqa: PLC0415
    return Path(kernels_common.__file__).resolve().parent


def kernel_source(name: str) -> str:
    """``kernels_opencl/<name>`` (e.g. ``pairhmm/inter_task.cl``) with its ``#include "x.h"`` lines
    replaced by the headers themselves (so the program cache keys on the whole text and no
    compiler needs include paths); a header is looked up beside the including file, then in
    ``kernels_opencl``, then in ``kernels_common`` (``"profile/task.h"``)."""
    roots = (kernel_dir(), common_kernel_dir())

    def expand(path: Path, seen: set) -> str:
        def repl(match):
            header = match.group(1)
            for folder in (path.parent,) + roots:
                found = folder / header
                if found.exists():
                    break
            else:
                raise FileNotFoundError(f"{path.name}: #include \"{header}\" not found")
            if found in seen:
                return ""
            seen.add(found)
            return expand(found, seen)
        return re.sub(r'^\s*#include\s+"([^"]+)"\s*$', repl, path.read_text(), flags=re.M)

    return expand(kernel_dir() / name, set())


class DeviceKit:
    """Context, profiling queue, program cache and capabilities of one device."""

    def __init__(self, platform, device):
        cl = cl_module()
        self.platform, self.device = platform, device
        self.label = _label(platform, device)
        broken = build_error(platform, device)
        if broken:
            raise RuntimeError(f"{self.label}: {broken}")
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.fp64 = bool(device.double_fp_config)
        self.is_gpu = _is_gpu(device)
        self.shuffle = _shuffle_kind(platform, device)
        # cl_intel_required_subgroup_size lets a kernel ask for 16 lanes (AVX-512 width on CPUs,
        # a native size on Intel GPUs); elsewhere 32 is asked for and checked at the first launch.
        self.required_sub_group = "cl_intel_required_subgroup_size" in device.extensions.split()
        self._programs: dict = {}
        self._kernels: dict = {}
        self._shuffle_checked: dict = {}
        self._err_tables: dict = {}
        self._scratch: dict = {}

    def working_shuffle(self, teams: int = 1, unoptimized: bool = False) -> Optional[str]:
        """The shuffle kind, once a probe build shows that in work-groups of ``teams`` teams of
        ``warp_width`` work-items each team is exactly one sub-group (else None: the warp
        families take the local-memory path). NVIDIA's warps are 32 lanes by definition.
        The probe is a real warp kernel built as the caller builds its own (``unoptimized``, see
        :meth:`program`): the sub-group size is the compiled program's, and a caller's first
        launch on a short haplotype reuses it."""
        if self.shuffle is None or self.shuffle == "ptx":
            return self.shuffle
        key = (teams, unoptimized and not self.is_gpu)
        if key not in self._shuffle_checked:
            defines = {"TILE": 1, "THREADS": self.warp_width, "PAIRS_PER_GROUP": teams,
                       "EXCHANGE": EXCHANGE[self.shuffle], "HAP_STRIDE": 64, "USE_DOUBLE": 0}
            try:
                kernel = self.kernel("pairhmm/wavefront.cl", "wavefront", defines,
                                     unoptimized=unoptimized)
                size = kernel.get_sub_group_info(
                    self.device, cl_module().kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                    [self.warp_width * teams])
                self._shuffle_checked[key] = int(size) == self.warp_width
            except Exception:  # noqa: BLE001 - a failed build or query: no shuffle path
                self._shuffle_checked[key] = False
        return self.shuffle if self._shuffle_checked[key] else None

    @property
    def warp_width(self) -> int:
        """Lanes of the warp family's team: the hardware sub-group where shuffles exist."""
        if self.shuffle in ("khr", "intel", "khr-indexed") and self.required_sub_group:
            return 16
        return 32

    def program(self, source: str, defines: dict, unoptimized: bool = False):
        """``source`` built with ``defines``; ``unoptimized``: with ``OPT_DISABLE`` where the
        device is not a GPU (a GPU builds the same program either way)."""
        unoptimized = unoptimized and not self.is_gpu
        key = (source, tuple(sorted(defines.items())), unoptimized)
        prg = self._programs.get(key)
        if prg is None:
            options = [f"-D{k}={v}" for k, v in sorted(defines.items())]
            if not defines.get("USE_DOUBLE"):
                # Far-from-alignment cells underflow into denormals, very slow on CPUs; they never
                # matter to a sum that passes the 1e-28 test. a*b+c may become one FMA, as nvcc
                # does by default for the CUDA twins.
                options += ["-cl-denorms-are-zero", "-cl-mad-enable"]
            if unoptimized:
                options.append(OPT_DISABLE)
            prg = cl_module().Program(self.context, kernel_source(source)).build(options=options)
            self._programs[key] = prg
        return prg

    def kernel(self, source: str, name: str, defines: dict, unoptimized: bool = False):
        """One kernel object per (program, name): PyOpenCL builds a new one on each retrieval."""
        unoptimized = unoptimized and not self.is_gpu
        key = (source, name, tuple(sorted(defines.items())), unoptimized)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = cl_module().Kernel(
                self.program(source, defines, unoptimized), name)
        return k

    def err_table(self, dtype) -> object:
        """Device copy of err[q] = 10^(-q/10), q = 0..127, computed as the host model does."""
        dtype = np.dtype(dtype)
        buf = self._err_tables.get(dtype)
        if buf is None:
            cl = cl_module()
            table = (10.0 ** (-np.arange(128, dtype=np.float64) / 10.0)).astype(dtype)
            buf = cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=table)
            self._err_tables[dtype] = buf
        return buf

    def scratch(self, name: str, nbytes: int):
        """A grow-only device work buffer (allocated outside the timed stages)."""
        cl = cl_module()
        nbytes = max(int(nbytes), 16)
        buf = self._scratch.get(name)
        if buf is None or buf.size < nbytes:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
            self._scratch[name] = buf
        return buf


_KITS: dict = {}


def device_kit(spec: Optional[str] = None) -> DeviceKit:
    platform, device = choose_device(spec)
    key = (platform.int_ptr, device.int_ptr)
    if key not in _KITS:
        _KITS[key] = DeviceKit(platform, device)
    return _KITS[key]


def devices(probe: bool = True) -> list[dict]:
    """For ``hmmbench list``: every OpenCL platform's devices, the selected one marked.
    ``probe=False`` (a result's device details): no trial build on a device not built on yet
    (its "builds" left out), which cost a run ~2 CPU-s on three CPU devices."""
    try:
        found = _all_devices()
    except ImportError:
        return [{"api": "opencl", "available": False, "reason": "pyopencl not installed"}]
    if not found:
        return [{"api": "opencl", "available": False, "reason": "no OpenCL platform or device"}]
    try:
        chosen = _label(*choose_device())
    except UserError as exc:
        chosen = None
        bad = str(exc)
    else:
        bad = None
    out = []
    for p, d in found:
        shuffle = _shuffle_kind(p, d)
        out.append({"api": "opencl", "platform": p.name.strip(), "device": d.name.strip(),
                    "type": "GPU" if _is_gpu(d) else "CPU" if d.type & cl_module().device_type.CPU
                    else "other",
                    "version": d.version.strip(), "driver_version": d.driver_version.strip(),
                    "fp64": bool(d.double_fp_config),
                    "warp path": PATH_NAMES[shuffle or "local"],
                    **({"builds": build_error(p, d) or "yes"}
                       if probe or (p.int_ptr, d.int_ptr) in _BUILD_ERRORS else {}),
                    "selected": _label(p, d) == chosen})
    if bad:
        out.append({"api": "opencl", "available": False, "reason": bad})
    return out
