"""The skip policy of tests/conftest.py: which skip reasons a CI run may give."""
from __future__ import annotations

import os
import re

#: Reasons a skip may give in CI: the hardware and toolkits that `make test` does not install.
ALLOWED_IN_CI = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"pycuda not installed",                # `make test` installs PyCUDA only beside a GPU
    r"\bno CUDA device\b",
    r"\bCUDA driver error\b",
    r"\bnvcc not (found|installed)\b",      # the CUDA toolkit
    r"needs clang \(NVPTX target\), libclc and ptxas|has no NVPTX target",  # ptxas: the toolkit
    r"\bpycuda is installed here\b",        # the no-GPU checks, on a machine with a GPU
    r"\bchromium not installed\b",          # the HTML page's browser check (apt, not pip)
    # a CPU OpenCL runtime without sub-group shuffles (PoCL's) for the families that need them
    r"needs sub-group shuffles \(several pairs per work-group\), which this device lacks",
))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def skip_reason(report) -> str:
    """The reason of a skipped report (pytest keeps it as (path, line, 'Skipped: reason'))."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def allowed(reason: str) -> bool:
    return any(p.search(reason) for p in ALLOWED_IN_CI)


def enforce(report) -> None:
    """Turns a skip outside the allow-list into a failure (in CI only; xfail stays xfail)."""
    if not (in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report)
    if not allowed(reason):
        report.outcome = "failed"
        report.longrepr = (f"skipped in CI, where `make test` installs what this needs: {reason}\n"
                           "(tests/conftest.py ALLOWED_IN_CI lists the reasons a CI run may skip)")
