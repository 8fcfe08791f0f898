"""The suite's skip policy: in CI (``CI=true``, which .ci/run sets) a skip fails the test unless
its reason says that this machine lacks what `make test` never installs (a GPU, a CUDA driver,
the CUDA toolkit, a browser). Everything `make test` installs (pyhmmer, pyopencl and its CPU
devices, Dask, matplotlib, the real data sets beside the checkout) must run, so a broken install
shows as failures instead of a green run with hundreds of tests skipped."""
from __future__ import annotations

import pytest

from helpers.skip_policy import enforce

pytest_plugins = ["pytester"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    enforce(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    enforce(outcome.get_result())


#: The test files that take longest, longest first (make test's --durations lists the slow
#: tests; keep this in step with it). They run first: xdist hands whole files to its workers in
#: collection order (--dist loadfile --no-loadscope-reorder), so with the long files started
#: early the two workers end together instead of one finishing a long file alone.
SLOWEST_FILES = (
    "pairhmm/subwarp/test_cuda.py",
    "profile/test_cuda.py",
    "cluster/test_cluster.py",
    "profile/test_filters.py",
    "pairhmm/test_cuda_host.py",
    "pairhmm/subwarp/test_host_calls.py",
    "pairhmm/subwarp/test_opencl.py",
    "pairhmm/subwarp/test_opencl_exp.py",
    "pairhmm/test_opencl.py",
    "profile/test_opencl_warp.py",
    "profile/test_batch.py",
    "examples/test_examples.py",
    "profile/test_warp_emulation.py",
    "profile/test_resident.py",
    "profile/test_generic_edges.py",
)


def pytest_collection_modifyitems(config, items):
    """The slowest files first, in SLOWEST_FILES' order; the order within a file and that of
    every other file as collected (a stable sort)."""
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}

    def place(item) -> int:
        path = item.nodeid.split("::", 1)[0].removeprefix("tests/")
        return rank.get(path, len(rank))
    items.sort(key=place)
