"""The statistics of stopping and of the compare gate.

Stopping (:mod:`hmmbench.runner.stopping`): the distribution-free interval of a median
(:func:`median_interval`, from order statistics) and how wide it is (:func:`median_noise`);
the interleaved gate (:mod:`hmmbench.rounds`) uses the same order statistics (:func:`order_rank`)
on its round ratios.

The gate (:mod:`hmmbench.compare`): the relative spread of a run's passes (:func:`spread`) and
the bootstrap interval of the ratio of two runs' medians (:func:`ratio_interval`).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def spread(xs: Sequence[float]) -> Optional[float]:
    """Relative spread of a sample set: (max - min) / median (None when it cannot be said)."""
    if len(xs) < 2:
        return None
    med = median(xs)
    return (max(xs) - min(xs)) / med if med > 0 else None


def order_rank(n: int, level: float = 0.95) -> int:
    """j of the distribution-free interval of the median of n samples, (x(j), x(n+1-j)): the
    largest j for which Binomial(n, 1/2) puts at most (1 - level) / 2 below j (the sign test);
    0 when no j does (too few samples: n < 6 at 95 %, n < 5 at 90 %)."""
    tail, below, j = (1.0 - level) / 2.0, 0.0, 0
    while j < n:
        below += math.comb(n, j) / 2.0 ** n       # P(fewer than j+1 samples below the median)
        if below > tail + 1e-12:
            break
        j += 1
    return j


def median_interval(xs: Sequence[float], level: float = 0.95) -> Optional[tuple]:
    """A distribution-free interval of the median, (low, high): the order statistics
    x(j) and x(n+1-j), j = :func:`order_rank`. None when there are too few samples."""
    j = order_rank(len(xs), level)
    if j == 0:
        return None
    s = sorted(xs)
    return s[j - 1], s[len(xs) - j]


def median_noise(xs: Sequence[float], level: float = 0.95) -> float:
    """The larger distance from the median to the ends of its interval, relative to it (inf
    when the interval cannot be said)."""
    ci = median_interval(xs, level)
    med = median(xs) if xs else 0.0
    if ci is None or not med > 0:
        return math.inf
    return max(med - ci[0], ci[1] - med) / med


#: Resamples of :func:`ratio_interval`; its seed is fixed, so one pair of files always gets the
#: same verdict.
BOOTSTRAP_RESAMPLES = 2000


def ratio_interval(base: Sequence[float], cand: Sequence[float], level: float = 0.95,
                   resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Optional[tuple]:
    """The bootstrap percentile interval of median(cand) / median(base): each side resampled
    with replacement on its own (None when a side is empty or a median is not positive)."""
    import numpy as np
    b, c = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    if not len(b) or not len(c) or not np.median(b) > 0:
        return None
    rng = np.random.default_rng(seed)
    mb = np.median(rng.choice(b, size=(resamples, len(b))), axis=1)
    mc = np.median(rng.choice(c, size=(resamples, len(c))), axis=1)
    ratios = mc / mb
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(ratios, [tail, 100.0 - tail])
    return float(lo), float(hi)
