"""The memory a generated set takes: the estimate the cap trusts is within 1.5x of the peak
measured while the set is generated (several shapes: equal lengths, reads much longer or much
shorter than their haplotypes, few and many pairs), and a set past the limit is refused --
naming the estimate and the limit -- before anything is allocated."""
from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import pytest

from hmmbench.pairhmm.datasets import synthetic
from hmmbench.pairhmm.datasets.synthetic import generate_fixed, synthetic_bytes
from helpers.hostile_world import RUN, refused, world  # noqa: F401 - world is a fixture

#: (read length, haplotype length, pairs): a few tens of MiB each.
SHAPES = [(64, 64, 100_000), (1, 1, 200_000), (4096, 4096, 2000), (64, 1, 100_000),
          (1, 1024, 10_000), (100, 4000, 2000), (4000, 100, 500), (27, 32, 150_000)]


def traced_peak(r: int, h: int, n: int) -> int:
    """The most memory NumPy and Python held while generating the set (tracemalloc sees NumPy's
    arrays)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        pairs = generate_fixed(r, h, n, 1)
        peak = tracemalloc.get_traced_memory()[1]
        del pairs
    finally:
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("r,h,n", SHAPES)
def test_estimate_within_one_and_a_half_of_the_peak(r, h, n):
    peak, estimate = traced_peak(r, h, n), synthetic_bytes(r, h, n)
    assert peak / 1.5 <= estimate <= 1.5 * peak, (peak, estimate)


#: The peak resident size before and after generating a set, from the kernel's VmHWM (fresh at
#: exec, unlike getrusage's ru_maxrss, which a child started by fork + exec inherits).
PROBE = """
import sys
from hmmbench.pairhmm.datasets import resolve
def hwm():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM:"))
ds = resolve(sys.argv[1])
before = hwm()
ds.load()
print(hwm() - before)
"""


@pytest.mark.parametrize("name,shape", [("equal-512@16000", (512, 512, 16000)),
                                        ("shape-1024x64@4000", (1024, 64, 4000))])
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_estimate_against_the_resident_peak(name, shape):
    """The same in a process of its own, against the peak resident size the kernel counts (what
    an out-of-memory kill goes by)."""
    out = subprocess.run([sys.executable, "-c", PROBE, name], capture_output=True, text=True,
                         check=True, timeout=120)
    grew = int(out.stdout.strip())
    estimate = synthetic_bytes(*shape)
    assert grew / 1.5 <= estimate <= 1.5 * grew, (grew, estimate)


def test_refused_before_anything_is_allocated(world, capsys, monkeypatch):
    """Past the memory available now: one line naming the estimate and the limit, exit 2, and
    no generation started (the loader is never called)."""
    monkeypatch.setattr(synthetic, "_available_memory", lambda: 1 << 30)
    monkeypatch.setattr(synthetic, "generate_fixed",
                        lambda *a: pytest.fail("generated a set past the limit"))
    line = refused(world, capsys, RUN + ["-d", "equal-2048@1e5"], "equal-2048@1e5",
                   "estimate", "available now, 1.0 GiB")
    assert f"{synthetic_bytes(2048, 2048, 10**5) / 2**30:.1f} GiB" in line


def test_refused_past_the_cap(world, capsys):
    refused(world, capsys, RUN + ["-d", "equal-4096@1e6"], "equal-4096@1e6", "estimate",
            "GiB")


def test_estimate_of_the_reported_case():
    """equal-4096@1e5 peaked at 3.4 GB when the estimate said 0.62 GB; now the estimate is the
    peak's size, and equal-4096@1e6 is past the 16 GiB cap."""
    assert 3.4e9 / 1.5 <= synthetic_bytes(4096, 4096, 10 ** 5) <= 3.4e9 * 1.5
    assert synthetic_bytes(4096, 4096, 10 ** 6) > synthetic.MAX_SYNTHETIC_BYTES
