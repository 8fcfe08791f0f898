"""Typed options: what a command asked for, built once from the command line and read by the
core, the workloads and the cluster (never an ``argparse.Namespace`` past :mod:`hmmbench.cli`).

:func:`run_options` and :func:`score_options` build them from plain values keyed by argparse
dest (``vars(args)``, or the same values sent to a cluster worker as a dict); a bad value is a
:class:`UserError` there, so an options object that exists holds sane values. A workload's own
options (profile: ``--model``, ``--kind``) travel as ``workload_options``, the object its
:meth:`hmmbench.workload.Workload.parse_options` makes of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .errors import UserError
from .memory import parse_size

#: ``hmmbench run``'s default seconds of timed passes per cell, and of untimed warm-up passes.
DEFAULT_MAX_TIME = 10.0
DEFAULT_WARMUP_TIME = 0.2
#: Bounds of the run options, so that no option can make a run last forever: seconds of timed
#: or warm-up passes per cell (a day), passes per cell, launches in flight, items sampled.
MAX_SECONDS = 86_400.0
MAX_REPEAT = 1_000_000
MAX_IN_FLIGHT = 1024
MAX_SAMPLE = 10 ** 9


def _tuple(v) -> tuple:
    """A repeatable option's values as a tuple (argparse gives lists; None: none given)."""
    if v is None:
        return ()
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


@dataclass(frozen=True)
class RunOptions:
    """``hmmbench run``'s options (see ``hmmbench run --help`` for what each means)."""
    workload: str = "pairhmm"
    datasets: tuple = ()                  # names or files; (): the workload's default set
    backends: tuple = ()                  # names or globs; (): all
    axes: tuple = ()                      # ("NAME=V1,V2", ...) as given to --axis
    chunking: tuple = ()                  # modes; (): each dataset's own
    in_flight: int = 1
    repeat: Optional[int] = None          # a fixed count of timed passes (--stopping fixed)
    stopping: str = ""                    # a stopping criterion spec, NAME[:KEY=VALUE,...]
    max_time: float = DEFAULT_MAX_TIME
    warmup_time: float = DEFAULT_WARMUP_TIME
    tolerance: Optional[float] = None     # None: the dataset's own, else 1e-4
    sample_pairs: Optional[int] = None    # None: the workload's own
    use_cache: bool = True
    json: Optional[str] = None
    resume: Optional[str] = None
    quiet: bool = False
    opencl_device: Optional[str] = None
    memory_limit: Optional[int] = None    # bytes a run may take; None: the memory available now
    #: bytes a run may take of a backend's device (GPU); None: the device's free memory now
    device_memory_limit: Optional[int] = None
    argv: tuple = ()                      # the command line, for the result file's header
    workload_options: Any = None          # Workload.parse_options's object
    # the cluster's options are hmmbench.cluster.options.ClusterOptions, built beside these

    def __post_init__(self):
        if self.repeat is not None and not (isinstance(self.repeat, int)
                                            and 1 <= self.repeat <= MAX_REPEAT):
            raise UserError(f"--repeat must be between 1 and {MAX_REPEAT}")
        if not (isinstance(self.in_flight, int) and 1 <= self.in_flight <= MAX_IN_FLIGHT):
            raise UserError(f"--in-flight must be between 1 and {MAX_IN_FLIGHT}")
        if not 0 < self.max_time <= MAX_SECONDS:
            raise UserError(f"--max-time must be above 0 and at most {MAX_SECONDS:g} seconds")
        if not 0 <= self.warmup_time <= MAX_SECONDS:
            raise UserError(f"--warmup-time must be between 0 and {MAX_SECONDS:g} seconds")
        if self.tolerance is not None and not 0 <= self.tolerance < math.inf:
            raise UserError("--tolerance must be a finite number, at least 0")
        if self.sample_pairs is not None and not 1 <= self.sample_pairs <= MAX_SAMPLE:
            raise UserError(f"--sample-pairs must be between 1 and {MAX_SAMPLE:.0e}")
        if self.repeat is not None and self.stopping:
            raise UserError("--repeat N is --stopping fixed:count=N: give one of them")


@dataclass(frozen=True)
class ScoreOptions:
    """``hmmbench score``'s options."""
    dataset: str
    backend: str
    output: str
    digits: int = 6
    workload: str = "pairhmm"
    workload_options: Any = None

    def __post_init__(self):
        if not 0 <= self.digits <= 17:
            raise UserError("--digits must be between 0 and 17")


#: ``hmmbench run`` dests that :class:`RunOptions` holds under another name.
_RUN_RENAMED = {"dataset": "datasets", "backend": "backends", "axis": "axes"}


def run_options(values: Mapping, workload) -> RunOptions:
    """RunOptions from ``hmmbench run``'s values by argparse dest (missing ones: defaults)."""
    v = dict(values)
    return RunOptions(
        workload=workload.name,
        datasets=_tuple(v.get("dataset")), backends=_tuple(v.get("backend")),
        axes=_tuple(v.get("axis")), chunking=_tuple(v.get("chunking")),
        in_flight=v.get("in_flight", 1), repeat=v.get("repeat"),
        stopping=v.get("stopping") or "",
        max_time=v.get("max_time", DEFAULT_MAX_TIME),
        warmup_time=v.get("warmup_time", DEFAULT_WARMUP_TIME),
        tolerance=v.get("tolerance"), sample_pairs=v.get("sample_pairs"),
        use_cache=not v.get("no_cache", False), json=v.get("json"), resume=v.get("resume"),
        quiet=bool(v.get("quiet", False)), opencl_device=v.get("opencl_device"),
        memory_limit=(None if v.get("memory_limit") is None
                      else parse_size(v["memory_limit"])),
        device_memory_limit=(None if v.get("device_memory_limit") is None
                             else parse_size(v["device_memory_limit"], "--device-memory-limit")),
        argv=_tuple(v.get("argv")),
        workload_options=workload.parse_options(v))


def score_options(values: Mapping, workload) -> ScoreOptions:
    """ScoreOptions from ``hmmbench score``'s values by argparse dest."""
    v = dict(values)
    return ScoreOptions(dataset=v["dataset"], backend=v["backend"], output=v["output"],
                        digits=v.get("digits", 6), workload=workload.name,
                        workload_options=workload.parse_options(v))
