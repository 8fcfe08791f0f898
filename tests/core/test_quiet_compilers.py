"""Compilers' chatter on a successful build (pyopencl's CompilerWarning: Intel's "kernel was
vectorized"; nvcc's remarks) is silent unless --verbose; other warnings and real build errors
still show."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import pyopencl  # noqa: F401 - installed by make test (the opencl extra): never skipped

from helpers.paths import REPO

# A compiler's chatter, then another warning, through hmmbench's filters
WARN_OPENCL = ("import warnings\n"
               "from hmmbench.apis.opencl import cl_module\n"
               "cl = cl_module()\n"
               "warnings.warn('a build log remark', cl.CompilerWarning)\n"
               "warnings.warn('another warning', UserWarning)\n")
WARN_CUDA = ("import warnings\n"
             "from hmmbench.apis.cuda import COMPILER_REMARKS, quiet_compiler_remarks\n"
             "quiet_compiler_remarks()\n"
             "warnings.warn(COMPILER_REMARKS + ':\\nkernel.cu(1): warning #177-D', UserWarning)\n"
             "warnings.warn('another warning', UserWarning)\n")


def run(args, verbose_env=None, **kw):
    env = {k: v for k, v in os.environ.items() if k != "PYOPENCL_COMPILER_OUTPUT"}
    env["PYTHONPATH"] = str(REPO)
    if verbose_env:
        env["PYOPENCL_COMPILER_OUTPUT"] = verbose_env
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=300, **kw)


def test_a_failed_build_still_raises():
    from hmmbench.apis import opencl
    cl = opencl.cl_module()
    devices = opencl._all_devices()
    assert devices, "no OpenCL device: make test installs CPU ones (scripts/install_opencl_cpu.sh)"
    ctx = cl.Context([devices[0][1]])
    try:
        cl.Program(ctx, "__kernel void broken(__global float *x) { x[0] = ; }").build()
    except cl.RuntimeError as exc:
        assert "broken" in str(exc) or "error" in str(exc).lower()
    else:
        raise AssertionError("a kernel that does not compile built")


def test_hmmbench_list_prints_no_compiler_chatter(tmp_path):
    quiet = run(["-m", "hmmbench", "list"], cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert "CompilerWarning" not in quiet.stderr and "Warning" not in quiet.stderr


@pytest.mark.parametrize("script, chatter", [(WARN_OPENCL, "build log remark"),
                                             (WARN_CUDA, "#177-D")], ids=["opencl", "nvcc"])
def test_compiler_chatter_is_filtered_unless_verbose(script, chatter):
    """pyopencl's CompilerWarning, and the UserWarning PyCUDA makes of nvcc's stderr on a
    successful build, are silent unless verbose; another warning still shows."""
    quiet = run(["-c", script])
    assert quiet.returncode == 0, quiet.stderr
    assert "another warning" in quiet.stderr and chatter not in quiet.stderr
    loud = run(["-c", script], verbose_env="1")
    assert "another warning" in loud.stderr and chatter in loud.stderr
