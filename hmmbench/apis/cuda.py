"""PyCUDA host glue shared by every CUDA backend of every workload (PyCUDA is imported lazily, so
this module imports without it).

- :func:`unavailable_reason` -- ``None`` or why CUDA cannot run here (pycuda missing, no device,
  driver error).
- :func:`driver` -- the ``pycuda.driver`` module, with this process's one context made current
  in the calling thread (the device's primary context, retained once; the main thread's push
  is popped at exit, another thread's by :func:`release_thread`; :func:`enter_thread` puts it
  back for a later task).
- :func:`compile` -- ``compile(source_name, defines, options=())`` builds ``kernels_cuda/<name>``
  (``name`` relative to that folder, e.g. ``pairhmm/inter_task.cu``) with ``-D`` defines for the
  current device's ``sm_XY``; cached in-process by (source, defines, options) and on disk by
  PyCUDA's own cache. Kernels declare ``extern "C"`` themselves.
- :func:`gpu_name`, :func:`device_attributes`; events and clocks: :mod:`.cuda_timing`.
- :class:`DeviceBuffers` -- grow-only device allocations reused across runs.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib.resources
import os
import re
import subprocess
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np


# ------------------------------------------------------------------------------------------------
# Context and availability
# ------------------------------------------------------------------------------------------------
_CTX: dict = {}


def _import_pycuda():
    import pycuda.driver as drv  # noqa: F401 - lazy, optional dependency
    return drv


#: Host memory of a CUDA backend's process for the driver, its context and the kernel builds:
#: resident peaks of 127.7-129.7 MiB measured on an H200 (driver 580, PyCUDA; first calls on 10s,
#: whose own arrays need ~3 MiB) with scripts/memory_ratio.py (docs/working-memory.md).
HOST_RUNTIME_BYTES = 125 << 20
#: The steps CUDA hands device memory out in (every device peak measured on an H200 is a
#: multiple of 2 MiB): a call's device memory is its buffers in whole pages, the small ones
#: sharing pages.
DEVICE_PAGE_BYTES = 2 << 20
#: Nothing else grows at a launch: the context (made before the run's check reads the free
#: memory) already holds the default 1 KiB stack of local memory for every resident thread, and
#: a launch grows it only for a kernel past that -- by (local bytes - 1 KiB) x SMs x threads per
#: SM: 830,472,192 bytes for 4 KiB a thread on an H200, nothing for 512 B or 1 KiB; every CUDA
#: kernel here takes at most 328 B; loading a small module took no page (docs/working-memory.md).


def device_pages(buffers) -> int:
    """Device bytes of ``buffers`` (their sizes) in CUDA's 2 MiB pages: each one of at least a
    page in pages of its own, the smaller ones sharing pages while they fit (the driver
    sub-allocates them; packed first fit, largest first): three 1.7 MiB buffers beside 0.7 MiB
    of others took 4 pages on an H200, not the 3 their sum fills."""
    page = lambda n: -(-int(n) // DEVICE_PAGE_BYTES) * DEVICE_PAGE_BYTES  # noqa: E731
    room = []                                   # what is left of each shared page
    for b in sorted((int(b) for b in buffers if b < DEVICE_PAGE_BYTES), reverse=True):
        fits = next((i for i, left in enumerate(room) if b <= left), None)
        if fits is None:
            room.append(DEVICE_PAGE_BYTES - b)
        else:
            room[fits] -= b
    return (sum(page(b) for b in buffers if b >= DEVICE_PAGE_BYTES)
            + DEVICE_PAGE_BYTES * len(room))


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> Optional[str]:
    """None when PyCUDA and a CUDA device are usable, else a one-line reason."""
    try:
        drv = _import_pycuda()
    except ImportError:
        return "pycuda not installed (pip install pycuda)"
    except Exception as exc:  # noqa: BLE001 - e.g. libcuda missing
        return f"pycuda failed to load: {exc}"
    try:
        drv.init()
        if drv.Device.count() == 0:
            return "no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return f"CUDA driver error: {exc}"
    return None


_THREAD = threading.local()     # .pushed: the context is on this thread's stack


def driver():
    """``pycuda.driver`` with this process's context current in this thread (created on first
    use; a CUDA context is current per thread, and a Dask worker runs tasks on its own threads)."""
    if "drv" not in _CTX:
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        drv = _import_pycuda()
        dev = drv.Device(int(os.environ.get("HMMBENCH_CUDA_DEVICE", "0")))
        _CTX.update(drv=drv, dev=dev, ctx=dev.retain_primary_context())
        atexit.register(release_thread)
    if not getattr(_THREAD, "pushed", False):
        _CTX["ctx"].push()
        _THREAD.pushed = True
    return _CTX["drv"]


def enter_thread() -> None:
    """Makes the process's context current in this thread if the process has one already (a
    worker's later task: its backends keep buffers and kernels of that context)."""
    if "drv" in _CTX:
        driver()


def release_thread() -> None:
    """Pops the context off this thread's stack if :func:`driver` put it there (a worker thread
    done with its task; the main thread at exit). PyCUDA aborts the process at exit when a
    context is still on some thread's stack."""
    if getattr(_THREAD, "pushed", False):
        _THREAD.pushed = False
        try:
            _CTX["ctx"].pop()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_LIBCUDA: dict = {}


def _libcuda():
    if "lib" not in _LIBCUDA:
        _LIBCUDA["lib"] = ctypes.CDLL("libcuda.so.1")
    return _LIBCUDA["lib"]


@contextlib.contextmanager
def in_context():
    """The process's context current in this thread for a call (pushed and popped again where
    this thread does not hold it: a pool's thread; nothing before the process has one)."""
    pushed = "ctx" in _CTX and not getattr(_THREAD, "pushed", False)
    if pushed:
        _CTX["ctx"].push()
    try:
        yield
    finally:
        if pushed:
            _CTX["ctx"].pop()


def host_register(ptr: int, nbytes: int) -> bool:
    """Page-locks ``nbytes`` of host memory at ``ptr`` in place (cuMemHostRegister, through
    ctypes: PyCUDA's register_host_memory fails under NumPy 2, inducer/pycuda#459), so copies
    from it run at the link's speed without a staging copy; from any thread once the process
    has its context. False where the driver refuses (memory already registered, a read-only
    file mapping, no page-locked memory left) or there is no context or driver library."""
    if "ctx" not in _CTX:
        return False
    try:
        lib = _libcuda()
    except OSError:
        return False
    with in_context():
        return lib.cuMemHostRegister_v2(ctypes.c_void_p(ptr), ctypes.c_size_t(nbytes),
                                        ctypes.c_uint(0)) == 0


def host_unregister(ptr: int) -> bool:
    """Makes memory :func:`host_register` page-locked at ``ptr`` pageable again, from any
    thread."""
    if "ctx" not in _CTX:
        return False
    with in_context():
        return _libcuda().cuMemHostUnregister(ctypes.c_void_p(ptr)) == 0


class CapturedGraph:
    """Driver calls issued on a stream captured into a CUDA graph, instantiated once and launched
    again with one ``cuGraphLaunch`` (through ctypes: PyCUDA has no graph API). Capture in
    relaxed mode: other threads' driver calls go on meanwhile. Streams that wait on an event
    recorded on the capturing stream join the capture; they must be joined back before
    :meth:`end`. Nothing issued during the capture runs until :meth:`launch`."""

    def __init__(self, stream):
        self._lib, self.exec = _libcuda(), ctypes.c_void_p()
        rc = self._lib.cuStreamBeginCapture_v2(ctypes.c_void_p(stream.handle), ctypes.c_int(2))
        if rc != 0:
            raise RuntimeError(f"cuStreamBeginCapture: CUresult {rc}")
        self.stream = stream

    def end(self) -> "CapturedGraph":
        """Ends the capture (also after a failure while issuing, which it then reports) and
        instantiates the graph."""
        graph = ctypes.c_void_p()
        rc = self._lib.cuStreamEndCapture(ctypes.c_void_p(self.stream.handle),
                                          ctypes.byref(graph))
        if rc != 0:
            raise RuntimeError(f"cuStreamEndCapture: CUresult {rc}")
        try:
            rc = self._lib.cuGraphInstantiateWithFlags(ctypes.byref(self.exec), graph,
                                                       ctypes.c_ulonglong(0))
            if rc != 0:
                raise RuntimeError(f"cuGraphInstantiate: CUresult {rc}")
        finally:
            self._lib.cuGraphDestroy(graph)
        return self

    def launch(self, stream) -> None:
        rc = self._lib.cuGraphLaunch(self.exec, ctypes.c_void_p(stream.handle))
        if rc != 0:
            raise RuntimeError(f"cuGraphLaunch: CUresult {rc}")

    def destroy(self) -> None:
        if self.exec:
            self._lib.cuGraphExecDestroy(self.exec)
            self.exec = ctypes.c_void_p()


def graphs_available() -> bool:
    """Whether the driver library has the graph calls :class:`CapturedGraph` makes (CUDA 12+)."""
    if "graphs" not in _LIBCUDA:
        try:
            lib = _libcuda()
            _LIBCUDA["graphs"] = all(hasattr(lib, f) for f in (
                "cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
                "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy"))
        except OSError:
            _LIBCUDA["graphs"] = False
    return _LIBCUDA["graphs"]


def device():
    driver()
    return _CTX["dev"]


def gpu_name() -> str:
    return device().name()


def free_memory() -> int:
    """Bytes free on this process's GPU now (cuMemGetInfo)."""
    return int(driver().mem_get_info()[0])


@functools.lru_cache(maxsize=1)
def device_attributes() -> dict:
    """The few device properties the launch code needs."""
    drv, dev = driver(), device()
    a = drv.device_attribute
    cc = dev.compute_capability()
    return {
        "name": dev.name(), "compute_capability": f"{cc[0]}.{cc[1]}", "arch": f"sm_{cc[0]}{cc[1]}",
        "sm_count": dev.get_attribute(a.MULTIPROCESSOR_COUNT),
        "max_shared_per_block_optin": dev.get_attribute(a.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        # per SM, for resident_blocks
        "registers_per_sm": dev.get_attribute(a.MAX_REGISTERS_PER_MULTIPROCESSOR),
        "shared_per_sm": dev.get_attribute(a.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        "threads_per_sm": dev.get_attribute(a.MAX_THREADS_PER_MULTIPROCESSOR),
        "blocks_per_sm": dev.get_attribute(a.MAX_BLOCKS_PER_MULTIPROCESSOR),
        "reserved_shared_per_block": dev.get_attribute(a.RESERVED_SHARED_MEMORY_PER_BLOCK),
        "total_memory": dev.total_memory(),
        "pci_bus_id": dev.pci_bus_id(),
    }


def devices(probe: bool = True) -> list[dict]:
    """For ``hmmbench list``: the CUDA devices, or one entry saying why there are none
    (``probe``: as OpenCL's; the driver is asked, nothing is built)."""
    reason = unavailable_reason()
    if reason:
        return [{"api": "cuda", "available": False, "reason": reason}]
    drv = driver()
    out = []
    version = drv.get_driver_version()      # e.g. 12040: the compare gate tells drivers apart
    for i in range(drv.Device.count()):
        d = drv.Device(i)
        cc = d.compute_capability()
        out.append({"api": "cuda", "index": i, "name": d.name(), "available": True,
                    "compute_capability": f"{cc[0]}.{cc[1]}",
                    "memory_gib": round(d.total_memory() / 2**30, 1),
                    "driver_version": f"{version // 1000}.{version % 1000 // 10}"})
    return out


# ------------------------------------------------------------------------------------------------
# Run-time compilation
# ------------------------------------------------------------------------------------------------
def kernel_dir() -> str:
    """Directory of the ``kernels_cuda`` package (sources and headers)."""
    return str(importlib.resources.files("kernels_cuda"))


def common_kernel_dir() -> str:
    """Directory of the ``kernels_common`` package (headers written once for CUDA and OpenCL)."""
    return str(importlib.resources.files("kernels_common"))


def kernel_source(source_name: str) -> str:
    return importlib.resources.files("kernels_cuda").joinpath(source_name).read_text()


def define_flags(defines: dict) -> list[str]:
    """``{"TILE": 4}`` -> ``["-DTILE=4"]`` in a stable order (also used by the nvcc test)."""
    return [f"-D{k}={int(v) if isinstance(v, bool) else v}" for k, v in sorted(defines.items())]


def include_dirs(source_name: str) -> list[str]:
    """Where ``#include "x.cuh"`` is found: beside the source, then the ``kernels_cuda`` and
    ``kernels_common`` roots (``"profile/task.h"``)."""
    return [os.path.join(kernel_dir(), os.path.dirname(source_name)), kernel_dir(),
            common_kernel_dir()]


_MODULES: dict = {}

#: Default nvcc options for every kernel: full optimization, no fast-math (exact-ish float32).
BASE_OPTIONS = ("-O3",)


def nvcc_cubin(source_name: str, defines: dict, cubin: str, arch: str = "sm_90") -> str:
    """nvcc's cubin of ``kernels_cuda/<source_name>`` with the options, defines and include
    folders ``compile`` uses, for ``arch`` (no device needed: the compiler evidence scripts);
    returns ptxas' ``-v`` log."""
    out = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", *BASE_OPTIONS, "-Xptxas", "-v",
                          *define_flags(defines), *(f"-I{d}" for d in include_dirs(source_name)),
                          os.path.join(kernel_dir(), source_name), "-o", str(cubin)],
                         capture_output=True, text=True, check=True)
    return out.stderr


def ptxas_resources(ptxas_log: str, fn: str) -> dict:
    """Registers and spill-store bytes of entry ``fn`` in a ``ptxas -v`` log."""
    part = ptxas_log.split(f"Compiling entry function '{fn}'")[-1]
    regs = re.search(r"Used (\d+) registers", part)
    spill = re.search(r"(\d+) bytes spill stores", part)
    return {"registers": int(regs.group(1)) if regs else None,
            "spill_store_bytes": int(spill.group(1)) if spill else None}


#: the start of the UserWarning PyCUDA gives when nvcc succeeded with remarks on stderr
COMPILER_REMARKS = "The CUDA compiler succeeded, but said the following"
#: set (to "1", as ``hmmbench --verbose`` does): the compilers' remarks show
VERBOSE_ENV = "PYOPENCL_COMPILER_OUTPUT"


def quiet_compiler_remarks() -> None:
    """Silence nvcc's remarks on a build that succeeded (one process-wide filter, as the OpenCL
    side does: a per-call ``catch_warnings`` is not thread-safe and builds run in threads); a
    failed build still raises, other warnings still show, ``--verbose`` shows the remarks."""
    if os.environ.get(VERBOSE_ENV, "0") in ("", "0"):
        warnings.filterwarnings("ignore", message=re.escape(COMPILER_REMARKS),
                                category=UserWarning)


def compile(source_name: str, defines: Optional[dict] = None, options=()):  # noqa: A001
    """Build ``kernels_cuda/<source_name>`` for the current device; returns a pycuda module."""
    defines = dict(defines or {})
    key = (source_name, tuple(sorted(defines.items())), tuple(options))
    if key not in _MODULES:
        driver()
        quiet_compiler_remarks()
        from pycuda.compiler import SourceModule
        opts = list(BASE_OPTIONS) + define_flags(defines) + list(options)
        mod = SourceModule(kernel_source(source_name), options=opts, no_extern_c=True,
                           arch=device_attributes()["arch"], include_dirs=include_dirs(source_name))
        # one Function per kernel name and module: a launch path asks for its kernels on every
        # call, and each fetch is a driver call and an attribute read
        mod.get_function = functools.lru_cache(maxsize=None)(
            functools.partial(_fetched_function, mod.get_function, source_name))
        _MODULES[key] = mod
    return _MODULES[key]


#: (source, kernel name) -> local memory bytes per thread of every kernel this process fetched
_LOCAL_BYTES: dict = {}


def _fetched_function(get_function, source_name: str, name: str):
    fn = get_function(name)
    _LOCAL_BYTES[source_name, name] = max(_LOCAL_BYTES.get((source_name, name), 0),
                                          fn.local_size_bytes)
    return fn


def fetched_local_bytes() -> dict:
    """Local memory bytes per thread (the compiled kernel's attribute, its stack frame) of every
    kernel this process fetched from a module :func:`compile` built, by (source, name): the
    largest build of each."""
    return dict(_LOCAL_BYTES)


def build_into_cache(specs, threads: int = 16) -> int:
    """Build ``specs`` ((source, defines) pairs) into PyCUDA's disk cache, ``threads`` nvcc at
    once -- the call :func:`compile`'s SourceModule makes, so its later loads hit the cache (a
    fresh GPU machine's cache is empty). Returns how many."""
    from pycuda.compiler import compile as nvcc_compile  # noqa: PLC0415 - optional dependency
    quiet_compiler_remarks()
    arch = device_attributes()["arch"]

    def build(spec):
        source, defines = spec
        nvcc_compile(kernel_source(source), options=list(BASE_OPTIONS) + define_flags(defines),
                     no_extern_c=True, arch=arch, include_dirs=include_dirs(source))

    specs = list(specs)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(build, specs))
    return len(specs)


def resident_blocks(attrs: dict, registers: int, threads: int, shared_bytes: int) -> int:
    """Blocks of a kernel one SM holds at once (``attrs``: ``device_attributes``), by the CUDA
    occupancy rules: registers are allocated per warp in units of 256 from each of the SM's
    four schedulers' quarter of the register file; shared memory per block (static + dynamic)
    plus the driver's reserve; threads and blocks per SM."""
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // 256) * 256
    by_regs = (attrs["registers_per_sm"] // 4 // per_warp) * 4 // warps if per_warp else 1 << 30
    by_smem = attrs["shared_per_sm"] // (shared_bytes + attrs["reserved_shared_per_block"])
    return max(0, min(by_regs, by_smem, attrs["threads_per_sm"] // (warps * 32),
                      attrs["blocks_per_sm"]))


def function_resources(fn) -> dict:
    """Registers / shared / local bytes of a compiled kernel (for ``info``)."""
    return {"registers": fn.num_regs, "static_shared_bytes": fn.shared_size_bytes,
            "local_bytes": fn.local_size_bytes}


# ------------------------------------------------------------------------------------------------
# Device memory and the float32 fallback
# ------------------------------------------------------------------------------------------------
class DeviceBuffers:
    """Named device allocations, grown on demand and reused across runs (no per-run malloc)."""

    def __init__(self):
        self._bufs: dict = {}

    def get(self, name: str, nbytes: int):
        nbytes = max(int(nbytes), 4)
        have = self._bufs.get(name)
        if have is None or have[1] < nbytes:
            if have is not None:
                have[0].free()
            self._bufs[name] = (driver().mem_alloc(nbytes), nbytes)
        return self._bufs[name][0]

    def upload(self, name: str, array: np.ndarray):
        array = np.ascontiguousarray(array)
        buf = self.get(name, array.nbytes)
        if array.nbytes:
            driver().memcpy_htod(buf, array)
        return buf

    def free(self):
        for buf, _ in self._bufs.values():
            buf.free()
        self._bufs.clear()
