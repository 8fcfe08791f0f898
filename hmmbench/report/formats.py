"""How numbers, times, errors and statuses are written in every report."""
from __future__ import annotations

import math


STATUS_STYLE = {"ok": "green", "mismatch": "bold red", "error": "red",
                "unavailable": "yellow", "unchecked": "magenta", "peer": "cyan"}
THROTTLE_MARK = "⚠"


def _time_unit(s: float) -> tuple:
    """(scale, unit) that fmt_seconds shows ``s`` in."""
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1, 1e3, "ms"), (120, 1, "s")):
        if s < limit:
            return scale, unit
    return 1 / 60, "min"


def fmt_seconds(s) -> str:
    """Seconds with a sensible unit: 3.2 µs, 45.1 ms, 1.23 s, 2.0 min."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    if s == 0:
        return "0"
    scale, unit = _time_unit(s)
    return f"{s * scale:.3g} {unit}"


def _fixed(x: float, digits: int = 3) -> str:
    """``digits`` significant digits without an exponent (8524 -> "8520", 0.0123 -> "0.0123"),
    trailing zeros dropped as %g does."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    text = f"{round(x, decimals):.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_spread(median, lo=None, hi=None) -> str:
    """A stage's median with the min-max of the timed passes in the median's unit and to the
    same three significant digits, never as an exponent, when they differ from it:
    "63.1 ms (62.8–95)", "202 µs (146–8520)"."""
    text = fmt_seconds(median)
    if not median or lo is None or hi is None:
        return text
    scale, _ = _time_unit(median)
    low, mid, high = (_fixed(x * scale) for x in (lo, median, hi))
    return text if low == mid == high else f"{text} ({low}–{high})"


def fmt_count(n) -> str:
    if n is None:
        return "-"
    n = int(n)
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


def fmt_number(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def fmt_error(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str) or not math.isfinite(x):    # as stored: "Infinity", "NaN"
        return "NaN/inf"
    return "0" if x == 0 else f"{x:.1e}"
