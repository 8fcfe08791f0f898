"""A backend's device peak on a GPU, for the working-memory tests."""
from __future__ import annotations

import os

import pytest

from hmmbench.memory_peak import in_own_process


def gpu_device_peak(workload: str, backend: str, cell: str, env=None) -> dict:
    """:func:`in_own_process`'s device measure, skipped without a CUDA device (the sampler reads
    its free memory) or under pytest-xdist (the free memory is the whole device's: GPU tests
    running beside this one would be counted)."""
    from hmmbench.apis import cuda
    reason = cuda.unavailable_reason()
    if reason:
        pytest.skip(reason)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("the device's free memory is device-wide: run without -n")
    r = in_own_process(workload, backend, cell, "device", env=env, timeout=300)
    if "unavailable" in r:
        pytest.skip(r["unavailable"])
    return r
