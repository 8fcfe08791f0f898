"""The GPU kernels of a whole program, timed by Nsight Compute (``ncu``).

A peer program (gpuPairHMM) times its own batch: transfers, host waits and kernels together. To
set its kernels beside ours like with like, the program is run once more under ``ncu`` with the
one metric ``gpu__time_duration.sum`` per kernel launch. ncu serializes the launches and
reads each one's duration on the GPU, so the sum is the time the GPU spent in the program's
kernels, counted one after the other (a program that overlaps kernels on several streams would
read slower than it is; gpuPairHMM's pipeline runs its kernels on one stream per batch).

Clocks and caches are left alone (``--clock-control none --cache-control none``): the kernels
run as they do without the profiler. The program's own stdout is interleaved with ncu's CSV;
only the quoted CSV rows are read.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional, Sequence

ENV_NCU = "HMMBENCH_NCU"
METRIC = "gpu__time_duration.sum"
NCU_ARGS = ("--csv", "--print-units", "base", "--metrics", METRIC,
            "--clock-control", "none", "--cache-control", "none")
#: seconds per unit that ncu may print for a duration
UNIT_SECONDS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3,
                "msecond": 1e-3, "s": 1.0, "second": 1.0}
DEFAULT_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute")


class ProfilerError(RuntimeError):
    """ncu failed, or printed nothing this module can read (one line)."""


@dataclass(frozen=True)
class KernelTimes:
    """Each launch's (kernel name, seconds) in launch order, and the program's own stdout."""
    launches: tuple
    stdout: str

    @property
    def seconds(self) -> float:
        return sum(s for _, s in self.launches)

    def by_kernel(self) -> dict:
        """Kernel name -> (launches, seconds), the costliest first."""
        out: dict = {}
        for name, s in self.launches:
            n, t = out.get(name, (0, 0.0))
            out[name] = (n + 1, t + s)
        return dict(sorted(out.items(), key=lambda kv: -kv[1][1]))


def find_ncu() -> Optional[str]:
    """The ncu executable: ``$HMMBENCH_NCU``, else PATH, else CUDA's usual places."""
    explicit = os.environ.get(ENV_NCU)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for place in DEFAULT_PLACES:
        if os.path.isdir(place):
            candidates = sorted(os.path.join(root, "ncu") for root, _, files in os.walk(place)
                                if "ncu" in files)
            if candidates:
                return candidates[-1]
        elif os.access(place, os.X_OK):
            return place
    return None


def parse_csv(text: str) -> tuple:
    """(launches, everything else) from ncu's ``--csv`` output mixed with the program's own lines:
    ((kernel name, seconds), ...) for each row of the metric, and the other lines as one text."""
    table, other = [], []
    for line in text.splitlines():
        (table if line.startswith('"') else other).append(line)
    rows = list(csv.reader(io.StringIO("\n".join(table))))
    if not rows:
        return (), "\n".join(other)
    header = rows[0]
    try:
        name_at, metric_at = header.index("Kernel Name"), header.index("Metric Name")
        unit_at, value_at = header.index("Metric Unit"), header.index("Metric Value")
    except ValueError:
        raise ProfilerError(f"ncu's CSV header lacks a column: {','.join(header)[:120]}") \
            from None
    launches = []
    for row in rows[1:]:
        if len(row) != len(header) or row[metric_at] != METRIC:
            continue
        scale = UNIT_SECONDS.get(row[unit_at].strip())
        try:
            value = float(row[value_at].replace(",", ""))
        except ValueError:
            value = float("nan")
        if scale is None or not value >= 0:
            raise ProfilerError(f"unreadable kernel duration {row[value_at]!r} "
                                f"{row[unit_at]!r} for {row[name_at][:60]}")
        launches.append((row[name_at], value * scale))
    return tuple(launches), "\n".join(other)


def kernel_times(cmd: Sequence[str], *, env: Optional[dict] = None, cwd=None,
                 timeout: float = 1800, ncu: Optional[str] = None) -> KernelTimes:
    """Run ``cmd`` under ncu; every kernel launch's duration (raises ProfilerError)."""
    ncu = ncu or find_ncu()
    if ncu is None:
        raise ProfilerError(f"ncu (Nsight Compute) not found on PATH ({ENV_NCU} names one)")
    try:
        done = subprocess.run([ncu, *NCU_ARGS, *cmd], capture_output=True, text=True, env=env,
                              cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProfilerError(f"ncu did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise ProfilerError(f"ncu could not start: {exc}") from None
    if done.returncode != 0:
        last = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise ProfilerError(f"ncu exited with status {done.returncode}: "
                            f"{(last or ['(no output)'])[-1][:200]}")
    launches, stdout = parse_csv(done.stdout)
    if not launches:
        raise ProfilerError("ncu timed no kernel launch (the program launched none, or ncu "
                            "cannot read this GPU's counters)")
    return KernelTimes(launches, stdout)
