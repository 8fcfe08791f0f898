"""The backend interface every strategy implements, whatever its API.

A backend computes one result value per item of a work unit: a log10 likelihood per pair of a
Pair-HMM :class:`~hmmbench.pairhmm.model.PairSet`, a score per sequence of a profile search
(:class:`~hmmbench.profile.job.ProfileSearch`). It owns its layout step and its device glue, and measures its own stages (device events on
GPUs, ``perf_counter`` on CPUs); the runner repeats, takes medians and cross-checks.
"""
from __future__ import annotations

import abc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .memory import MemoryNeed

#: A workload's unit of work (PairSet, ProfileSearch): the core never looks inside it.
Unit = Any

#: Stage names, in pipeline order. ``total`` is measured by the runner around the whole call.
STAGES = ("prep", "h2d", "kernel", "d2h")

#: A backend without an estimate of its own is taken to need this many times its unit's bytes,
#: on the host and (GPU APIs) on the device: a layout copy, staging buffers and results, with
#: room to spare. Families with a measured model override :meth:`Backend.memory_need`.
DEFAULT_MEMORY_FACTOR = 4


@dataclass(frozen=True)
class Limits:
    """What a backend can take; ``None`` means no limit."""
    max_read_length: Optional[int] = None
    max_hap_length: Optional[int] = None


@dataclass
class Execution:
    """What one call of :meth:`Backend.run` returns."""
    log10: np.ndarray                     # float64, one per pair, in the PairSet's order
    timing: dict                          # seconds per stage in STAGES (missing stages = 0)
    n_fallback: int = 0                   # pairs recomputed in float64 after a float32 underflow
    info: dict = field(default_factory=dict)  # e.g. SM clocks, which code path ran
    #: Seconds of this call that belong to no stage and are left out of the runner's total (a
    #: peer program writing its input file and reading its output back).
    untimed_s: float = 0.0


class Finished:
    """A handle whose call already ran (the default :meth:`Backend.submit`)."""

    def __init__(self, execution: Execution):
        self._execution = execution

    def result(self) -> Execution:
        return self._execution


class StageClock:
    """Host-side stage timer for CPU backends: ``with clock("kernel"): ...``."""

    def __init__(self):
        self.timing = {s: 0.0 for s in STAGES}

    @contextmanager
    def __call__(self, stage: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timing[stage] += time.perf_counter() - t0


class Backend(abc.ABC):
    """One registered strategy. Subclasses set the class attributes or pass them to __init__."""

    workload: str = "pairhmm"
    name: str = ""
    api: str = ""          # numpy | cuda | opencl
    family: str = ""       # reference | inter-task | intra-task | warp | multi-warp | subwarp ...
    precision: str = "float32"
    limits: Limits = Limits()

    def __init__(self, **params):
        self.params = dict(params)

    def unavailable_reason(self) -> Optional[str]:
        """None when the backend can run here, else why not (missing driver, no GPU, ...)."""
        return None

    def device_name(self) -> str:
        """The device this backend runs on, as reported by its API."""
        import platform
        return platform.processor() or platform.machine()

    def refuse_reason(self, pairs: Unit) -> Optional[str]:
        """None when the backend can compute every pair of ``pairs``, else why not."""
        lim = self.limits
        if not hasattr(pairs, "max_read_length"):
            return None
        if lim.max_read_length is not None and pairs.max_read_length > lim.max_read_length:
            return (f"read length {pairs.max_read_length} exceeds this backend's limit "
                    f"of {lim.max_read_length}")
        if lim.max_hap_length is not None and pairs.max_hap_length > lim.max_hap_length:
            return (f"haplotype length {pairs.max_hap_length} exceeds this backend's limit "
                    f"of {lim.max_hap_length}")
        return None

    def check_accepts(self, pairs: Unit) -> None:
        """Raises ValueError (naming the backend and why) when it refuses ``pairs``."""
        reason = self.refuse_reason(pairs)
        if reason:
            raise ValueError(f"{self.name} refuses this input: {reason}")

    def refuse_chunking(self, mode: str) -> Optional[str]:
        """None when the backend can be timed with chunking ``mode``, else why not (a peer
        program that takes a whole file per process refuses one process per launch)."""
        return None

    def memory_need(self, shape) -> MemoryNeed:
        """The peak memory of one call on a unit of ``shape`` (the workload's
        :meth:`~hmmbench.workload.Workload.unit_shape`), beyond the unit itself. This default
        is conservative (DEFAULT_MEMORY_FACTOR x the unit's bytes); a family overrides it."""
        size = DEFAULT_MEMORY_FACTOR * int(getattr(shape, "nbytes", 0))
        return MemoryNeed(host=size, device=size if self.api in ("cuda", "opencl") else 0)

    def device_memory_free(self) -> Optional[int]:
        """Bytes free on this backend's GPU now (None: no GPU of its own, or unknown); the
        runner checks :meth:`memory_need`'s ``device`` against it."""
        return None

    @abc.abstractmethod
    def run(self, pairs: Unit) -> Execution:
        """Compute every pair; called once per launch (chunk) by the runner."""

    def submit(self, pairs: Unit):
        """Start a call and return a handle whose ``result()`` gives its Execution; the runner
        keeps up to ``--in-flight`` calls outstanding and collects them in order. This default
        runs the call at once (every backend works); a GPU backend may return before its
        device work is done, each outstanding call on its own resources."""
        return Finished(self.run(pairs))

    def close(self) -> None:
        """Release device resources (contexts, buffers)."""

    def describe(self) -> dict:
        return {"name": self.name, "api": self.api, "family": self.family,
                "workload": self.workload, "precision": self.precision,
                "params": self.params,
                "limits": {k: v for k, v in vars(self.limits).items() if v is not None}}
