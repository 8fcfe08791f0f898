"""The noise model of the compare gate: is a change between two sets of timed samples real?

Two runs of the same cell differ by a ratio of medians. The gate calls that ratio a change only
when the samples say it is not noise: a one-sided Mann-Whitney rank test (exact for small sets,
as timed repeats usually are, normal approximation beyond) at level ``ALPHA``. Without samples
(result files written before they were kept) the stored min/max ranges stand in: the change is
real only when the two ranges do not overlap.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional, Sequence

#: Significance level of the rank test. With 3 samples on each side, the smallest one-sided
#: p-value is 1/20 = 0.05: three repeats that all moved the same way are enough.
ALPHA = 0.05
#: Above this many sample pairs the exact distribution is replaced by the normal approximation.
EXACT_MAX = 400


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def u_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """Mann-Whitney U of ``a`` over ``b``: pairs with a > b, ties counting one half."""
    return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in a for y in b)


@lru_cache(maxsize=256)
def _u_counts(n: int, m: int) -> tuple:
    """How many of the C(n+m, n) rank orders give each U = 0..n*m (no ties)."""
    # f(n, m)[u] = f(n-1, m)[u-m] + f(n, m-1)[u]: the largest value belongs to one side or the other.
    if n == 0 or m == 0:
        return (1,)
    left, right = _u_counts(n - 1, m), _u_counts(n, m - 1)
    out = [0] * (n * m + 1)
    for u, c in enumerate(left):
        out[u + m] += c
    for u, c in enumerate(right):
        out[u] += c
    return tuple(out)


def p_greater(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided p-value that ``a`` tends to be larger than ``b`` (1.0 when either is empty)."""
    n, m = len(a), len(b)
    if not n or not m:
        return 1.0
    u = u_statistic(a, b)
    if n * m <= EXACT_MAX:
        counts = _u_counts(n, m)
        # ties make U a half-integer: count every order at least as extreme
        at_least = sum(c for k, c in enumerate(counts) if k >= u - 1e-9)
        return at_least / math.comb(n + m, n)
    mean, sd = n * m / 2.0, math.sqrt(n * m * (n + m + 1) / 12.0)
    z = (u - 0.5 - mean) / sd
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def spread(xs: Sequence[float]) -> Optional[float]:
    """Relative spread of a sample set: (max - min) / median (None when it cannot be said)."""
    if len(xs) < 2:
        return None
    med = median(xs)
    return (max(xs) - min(xs)) / med if med > 0 else None


def change_is_real(base: Sequence[float], cand: Sequence[float], slower: bool) -> Optional[bool]:
    """Whether the candidate's samples are really larger (``slower``) or smaller than the
    baseline's; None when either side has fewer than 2 samples (the test cannot say)."""
    if len(base) < 2 or len(cand) < 2:
        return None
    p = p_greater(cand, base) if slower else p_greater(base, cand)
    return p <= ALPHA + 1e-12


def ranges_apart(base: tuple, cand: tuple, slower: bool) -> Optional[bool]:
    """The fallback without samples: (min, max) ranges that do not overlap; None when unknown."""
    if None in base or None in cand:
        return None
    return cand[0] > base[1] if slower else cand[1] < base[0]


def median_interval(xs: Sequence[float], level: float = 0.95) -> Optional[tuple]:
    """A distribution-free interval of the median, (low, high): the order statistics
    x(j) and x(n+1-j) with j the largest for which Binomial(n, 1/2) puts at most
    (1 - level) / 2 below j. None when there are too few samples (n < 6 at 95 %)."""
    n = len(xs)
    tail, below, j = (1.0 - level) / 2.0, 0.0, 0
    while j < n:
        below += math.comb(n, j) / 2.0 ** n       # P(fewer than j+1 samples below the median)
        if below > tail + 1e-12:
            break
        j += 1
    if j == 0:
        return None
    s = sorted(xs)
    return s[j - 1], s[n - j]


def median_noise(xs: Sequence[float], level: float = 0.95) -> float:
    """The larger distance from the median to the ends of its interval, relative to it (inf
    when the interval cannot be said)."""
    ci = median_interval(xs, level)
    med = median(xs) if xs else 0.0
    if ci is None or not med > 0:
        return math.inf
    return max(med - ci[0], ci[1] - med) / med
