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
