"""The suite's skip policy (tests/conftest.py), run on a small suite of its own: in CI a skip
fails unless its reason is on the allow-list (no GPU, no CUDA toolkit...); elsewhere skips stay
skips; an expected failure stays one."""
from __future__ import annotations

import pytest

from helpers.paths import REPO
from helpers.skip_policy import allowed

SUITE = '''
import pytest

def test_without_a_package():
    pytest.importorskip("no_such_package_here")

def test_without_a_gpu():
    pytest.skip("CUDA unavailable: pycuda not installed (pip install pycuda)")

@pytest.mark.skipif(True, reason="nvcc not found: CUDA kernels not compile-checked")
def test_without_nvcc():
    pass

@pytest.mark.xfail(reason="a known failure")
def test_known_failure():
    assert False

def test_runs():
    pass
'''


@pytest.fixture
def policy_suite(pytester):
    pytester.makeconftest((REPO / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_in_ci_an_unexpected_skip_fails(policy_suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = policy_suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, skipped=2, xfailed=1)
    result.stdout.fnmatch_lines(["*skipped in CI*no_such_package_here*"])


def test_in_ci_a_module_skipped_on_import_fails(pytester, monkeypatch):
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest((REPO / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_module='import pytest\npytest.importorskip("no_such_package_here")\n'
                                   'def test_x():\n    pass\n')
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped in CI*no_such_package_here*"])


def test_outside_ci_skips_stay_skips(policy_suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    policy_suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, skipped=3,
                                                                     xfailed=1)


@pytest.mark.parametrize("reason,ok", [
    ("CUDA unavailable: pycuda not installed (pip install pycuda)", True),
    ("CUDA unavailable: no CUDA device", True),
    ("nvcc not installed", True),
    ("needs clang (NVPTX target), libclc and ptxas", True),
    ("chromium not installed (apt-get install chromium); the page was checked in Python", True),
    ("CUDA unavailable: pycuda failed to load: undefined symbol", False),
    ("pyhmmer not installed (pip install pyhmmer)", False),
    ("no usable OpenCL device (scripts/install_opencl_cpu.sh installs CPU ones)", False),
    ("real data set 10s not found (10s.in; set HMMBENCH_DATA_PATH)", False),
    ("could not import 'distributed': No module named 'distributed'", False),
])
def test_the_allow_list_names_only_what_make_test_does_not_install(reason, ok):
    assert allowed(reason) is ok
