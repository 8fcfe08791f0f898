"""The NVIDIA path of the OpenCL twins without an NVIDIA GPU: the kernels' OpenCL C with
EXCHANGE_PTX (inline PTX shfl.sync / bar.warp.sync / redux.sync / vote.sync) compiled by clang
for nvptx64 with libclc's OpenCL built-ins and the PTX assembled by ptxas for sm_90, so that the
inline assembly and the C around it are checked wherever clang, libclc (Debian: clang-14,
libclc-14) and ptxas exist. NVIDIA's own OpenCL compiler accepts the `asm` keyword; clang's
OpenCL mode spells it __asm__."""
import glob
import re
import shutil
import subprocess

import pytest

from hmmbench.apis.opencl import EXCHANGE, kernel_source

CLANG = next((c for c in ("clang", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14")
              if shutil.which(c)), None)
PTXAS = shutil.which("ptxas")
LIBCLC = next(iter(sorted(glob.glob("/usr/lib/clc/nvptx64--nvidiacl.bc")
                          + glob.glob("/usr/lib/llvm-*/lib/clc/nvptx64--nvidiacl.bc"))), None)
pytestmark = pytest.mark.skipif(CLANG is None or PTXAS is None or LIBCLC is None,
                                reason="needs clang (NVPTX target), libclc and ptxas")

SUBWARP = [{"SW_P": 8, "SW_K": 16, "SW_BIN_MAX": 128},
           {"SW_P": 32, "SW_K": 16, "SW_MULTI_TILE": 1, "SW_BIN_MAX": 1 << 30},
           {"SW_P": 4, "SW_K": 8, "SW_DOUBLE": 1, "SW_BIN_MAX": 32},
           # the rescue on the device: float32 bins queueing their underflows, the float64 kernels
           {"SW_P": 16, "SW_K": 32, "SW_BIN_MAX": 512, "SW_DEVICE_RESCUE": 1},
           {"SW_P": 32, "SW_K": 8, "SW_DOUBLE": 1, "SW_MULTI_TILE": 1, "SW_BIN_MAX": 1 << 30,
            "SW_DEVICE_RESCUE": 1}]
PROFILE = [{"GROUP": 16, "SIMD16": 1, "PREFETCH": 1, "LAZY_XE": 1, "VF_DPX": 1},
           {"GROUP": 32, "SIMD16": 0, "PREFETCH": 0, "LAZY_XE": 0, "VF_DPX": 0}]


def _ptx_assembles(source: str, defines: dict, tmp_path) -> str:
    cl = tmp_path / "k.cl"
    cl.write_text(kernel_source(source))
    ptx = tmp_path / "k.ptx"
    flags = [f"-D{k}={v}" for k, v in {**defines, "EXCHANGE": EXCHANGE["ptx"]}.items()]
    r = subprocess.run([CLANG, "-x", "cl", "-cl-std=CL1.2", "-target", "nvptx64-nvidia-nvcl",
                        "-Xclang", "-finclude-default-header", "-Xclang", "-mlink-bitcode-file",
                        "-Xclang", LIBCLC, "-O2", "-S", "-Dasm=__asm__",
                        *flags, "-o", str(ptx), str(cl)], capture_output=True, text=True)
    if r.returncode and "unknown target" in r.stderr:
        pytest.skip(f"{CLANG} has no NVPTX target")
    assert r.returncode == 0, r.stderr[-2000:]
    # clang's PTX header names an old ISA; the instructions need PTX 8.0 / sm_90
    text = re.sub(r"^\.version .*$", ".version 8.0", ptx.read_text(), flags=re.M)
    ptx.write_text(re.sub(r"^\.target .*$", ".target sm_90", text, flags=re.M))
    r = subprocess.run([PTXAS, "-arch=sm_90", "-c", "-o", str(tmp_path / "k.o"), str(ptx)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return ptx.read_text()


@pytest.mark.parametrize("defines", SUBWARP)
def test_subwarp_ptx_path_assembles_for_sm90(defines, tmp_path):
    text = _ptx_assembles("pairhmm/subwarp.cl", {**defines, "SW_BLOCK": 128}, tmp_path)
    assert "shfl.sync.up.b32" in text and "bar.warp.sync" in text


@pytest.mark.parametrize("defines", PROFILE)
def test_profile_warp_ptx_path_assembles_for_sm90(defines, tmp_path):
    d = {**defines, "MODEL_M": 400, "QB": 13, "QW": 7, "KP": 29, "BLOCK": 128}
    text = _ptx_assembles("profile/warp.cl", d, tmp_path)
    assert "redux.sync.max.s32" in text and "shfl.sync" in text
