"""When to stop repeating timed passes: a fixed count, a time cap, or a stable running median."""
from __future__ import annotations

import math
import statistics

from .config import RunConfig


def stop_repeating(totals: list, elapsed: float, cfg: RunConfig) -> bool:
    """Whether the timed passes so far are enough (see the module docstring)."""
    k = len(totals)
    if cfg.repeat:
        return k >= cfg.repeat
    if k >= cfg.max_repeats:
        return True
    if k == 1 and totals[0] >= cfg.max_time:
        return True
    if k < cfg.min_repeats:
        return False
    if elapsed >= cfg.max_time:
        return True
    return running_median_spread(totals) < cfg.stable_spread


def running_median_spread(totals: list, window: int = 3) -> float:
    """Relative spread (max-min)/median of the running median over the last ``window`` passes."""
    if len(totals) < window:
        return math.inf
    meds = [statistics.median(totals[:j]) for j in range(len(totals) - window + 1,
                                                         len(totals) + 1)]
    mid = statistics.median(meds)
    return (max(meds) - min(meds)) / mid if mid > 0 else 0.0
