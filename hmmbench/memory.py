"""The memory a run needs against the memory it may take: the limit (``--memory-limit``, else
the memory available now), what one backend call needs (:class:`MemoryNeed`, from
:meth:`hmmbench.backend.Backend.memory_need`) and the one-line refusal when it does not fit.

Everything here is checked before a dataset is generated or a backend allocates anything: an
out-of-memory kill ends a process with no message and loses the run, a refusal says why.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .errors import UserError

GiB, MiB = 1 << 30, 1 << 20
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": MiB, "mb": MiB,
          "mib": MiB, "g": GiB, "gb": GiB, "gib": GiB, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}


def available_memory() -> Optional[int]:
    """Linux's MemAvailable (what can be allocated without swapping), or None elsewhere."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def parse_size(text: str, option: str = "--memory-limit") -> int:
    """'512M', '8G', '1.5GiB', '1000000' -> bytes (binary units: 1G = 2^30 bytes)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = m[2].lower() if m else None
    if not m or unit not in _UNITS:
        raise UserError(f"{option} '{text}' is not a size (use e.g. 512M, 8G or 1.5GiB)")
    value = float(m[1]) * _UNITS[unit]
    if not 1 <= value <= 1 << 60:
        raise UserError(f"{option} '{text}' must be between 1 byte and 1 EiB")
    return int(value)


def fmt_bytes(n: float) -> str:
    """1.5e9 -> '1.4 GiB', 3e6 -> '2.9 MiB' (what the refusals and notes print)."""
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{n / MiB:.1f} MiB"


@dataclass(frozen=True)
class MemoryLimit:
    """How many bytes a run may take, and why that many (printed in a refusal)."""
    bytes: Optional[int]           # None: unknown (no /proc/meminfo and no --memory-limit)
    why: str
    #: ``--device-memory-limit``: bytes a run may take of a GPU (None: its free memory only)
    device: Optional[int] = None

    @classmethod
    def of(cls, option: Optional[int], device: Optional[int] = None) -> "MemoryLimit":
        """``--memory-limit`` when given, else the memory available now."""
        if option is not None:
            return cls(option, f"--memory-limit {fmt_bytes(option)}", device)
        available = available_memory()
        if available is None:
            return cls(None, "unknown (no /proc/meminfo; give --memory-limit)", device)
        return cls(available, f"the memory available now, {fmt_bytes(available)}", device)

    def on_device(self, free: Optional[int], where: str = "") -> Optional["MemoryLimit"]:
        """The device's limit: its ``free`` bytes (None: unknown) or ``--device-memory-limit``,
        whichever is less; None when neither is known."""
        if self.device is not None and (free is None or self.device <= free):
            return MemoryLimit(self.device, f"--device-memory-limit {fmt_bytes(self.device)}")
        if free is None:
            return None
        return MemoryLimit(free, f"the device's free memory{where}, {fmt_bytes(free)}")


@dataclass(frozen=True)
class MemoryNeed:
    """The peak memory of one backend call beyond the unit it is given: on the host (Python,
    NumPy, and a CPU OpenCL device's buffers, which live in host memory) and on a GPU.
    ``note``: how the backend keeps it bounded (``"in 12 pieces of at most ..."``), said in the
    record when the call is cut up."""
    host: int
    device: int = 0
    note: str = ""


def refusal(dataset: str, backend: str, need: int, limit: MemoryLimit,
            where: str = "memory") -> UserError:
    """The one line of a run refused for memory: the estimate, the limit, backend and dataset."""
    hint = ("fewer pairs, smaller launches (--chunking merged:N) or another backend"
            if where != "memory" else "fewer pairs or another backend, or raise --memory-limit")
    return UserError(f"dataset '{dataset}' on backend '{backend}': needs about "
                     f"{fmt_bytes(need)} of {where} (estimate), more than the limit, "
                     f"{limit.why}: ask for {hint}")
