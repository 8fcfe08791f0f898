"""Small inline-SVG charts for the HTML report: no scripts, no fonts or styles from the network.

Every data mark (bar, point, line) carries ``class="mark"`` and a ``<title>`` tooltip with its
value, so a page can be checked for empty plots and read without a pointer device. Axes say
what they show and in which unit.
"""
from __future__ import annotations

import math
from html import escape
from typing import Optional

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")
FONT = 'font-family="sans-serif" font-size="11"'


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _num(x: float) -> str:
    return str(int(x)) if abs(x) >= 1000 and x == int(x) else f"{x:.3g}"


def _log_ticks(lo: float, hi: float) -> list:
    """Powers of ten (and 2x, 5x when the range is short) covering [lo, hi]."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if b - a <= 3 else (1,)
    return [m * 10.0 ** e for e in range(a, b + 1) for m in steps if lo <= m * 10.0 ** e <= hi]


def _lin_ticks(lo: float, hi: float, n: int = 5) -> list:
    span = hi - lo or 1.0
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (m * step) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


class Scale:
    """Maps values to pixels, linear or logarithmic."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float, log: bool = False):
        if log:
            lo, hi = lo / 1.3, hi * 1.3
        elif lo == hi:
            lo, hi = lo - 1.0, hi + 1.0
        self.lo, self.hi, self.p0, self.p1, self.log = lo, hi, p0, p1, log

    def __call__(self, v: float) -> float:
        f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo)) \
            if self.log else (v - self.lo) / (self.hi - self.lo)
        return self.p0 + f * (self.p1 - self.p0)

    def ticks(self) -> list:
        return _log_ticks(self.lo, self.hi) if self.log else _lin_ticks(self.lo, self.hi)


def _svg(width: float, height: float, body: list, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(label)}">'
            + "".join(body) + "</svg>")


def _legend(names: list, x: float, y: float) -> list:
    out = []
    for i, n in enumerate(names):
        yy = y + 14 * i
        out.append(f'<rect x="{x:.1f}" y="{yy - 9:.1f}" width="10" height="10" '
                   f'fill="{colour(i)}"/><text x="{x + 14:.1f}" y="{yy:.1f}" {FONT}>'
                   f'{escape(n)}</text>')
    return out


def _title(left: float, title: str) -> str:
    return f'<text x="{left}" y="14" {FONT} font-weight="bold">{escape(title)}</text>'


def _x_grid(sx: "Scale", top: float, line_end: float, label_y: float) -> list:
    """Vertical grid lines at the x ticks, with their numbers below."""
    return [f'<line x1="{sx(t):.1f}" y1="{top}" x2="{sx(t):.1f}" y2="{line_end}" '
            f'stroke="#ddd"/><text x="{sx(t):.1f}" y="{label_y}" {FONT} '
            f'text-anchor="middle">{_num(t)}</text>' for t in sx.ticks()]


def _x_label(left: float, right_edge: float, y: float, text: str) -> str:
    return (f'<text x="{(left + right_edge) / 2:.0f}" y="{y}" {FONT} '
            f'text-anchor="middle">{escape(text)}</text>')


def hbars(labels: list, series: dict, xlabel: str, title: str = "", log: bool = True) -> str:
    """Horizontal grouped bars: one group per label, one bar per series ({name: values});
    None values are left out (no bar)."""
    names = list(series)
    vals = [v for vs in series.values() for v in vs if v is not None and (v > 0 or not log)]
    if not vals:
        return ""
    left, right, top = 190, 150, 26
    bar, gap = 9, 8
    group = bar * len(names) + gap
    height = top + max(group * len(labels), 14 * len(names)) + 40
    width = 660
    sx = Scale(min(vals), max(vals), left, width - right, log)
    body = [_title(left, title)] + _x_grid(sx, top, height - 34, height - 22)
    for gi, label in enumerate(labels):
        y0 = top + gi * group
        body.append(f'<text x="{left - 6}" y="{y0 + group / 2:.1f}" {FONT} text-anchor="end">'
                    f'{escape(str(label))}</text>')
        for si, name in enumerate(names):
            v = series[name][gi]
            if v is None or (log and v <= 0):
                continue
            x0 = sx(sx.lo) if log else sx(min(0.0, sx.lo))
            body.append(f'<rect class="mark" x="{x0:.1f}" y="{y0 + si * bar:.1f}" '
                        f'width="{max(1.0, sx(v) - x0):.1f}" height="{bar - 1}" '
                        f'fill="{colour(si)}"><title>{escape(str(label))} · {escape(name)}: '
                        f'{_num(v)}</title></rect>')
    body.append(_x_label(left, width - right, height - 6, xlabel))
    body += _legend(names, width - right + 10, top + 10)
    return _svg(width, height, body, title or xlabel)


def stacked_hbars(rows: list, parts: dict, xlabel: str, title: str = "") -> str:
    """Horizontal stacked bars: rows of (label, {part: value}); ``parts``: {part: colour}."""
    total = max((sum(v.get(p, 0.0) for p in parts) for _, v in rows), default=0.0)
    if total <= 0:
        return ""
    left, right, top, bar = 190, 110, 26, 14
    width = 660
    height = top + max(bar * len(rows), 14 * len(parts)) + 44    # room for the legend
    sx = Scale(0.0, total, left, width - right)
    body = [_title(left, title)] + _x_grid(sx, top, height - 36, height - 24)
    for ri, (label, vals) in enumerate(rows):
        y = top + ri * bar
        body.append(f'<text x="{left - 6}" y="{y + bar - 4:.1f}" {FONT} text-anchor="end">'
                    f'{escape(str(label))}</text>')
        acc = 0.0
        for part, col in parts.items():
            v = vals.get(part, 0.0)
            if v <= 0:
                continue
            body.append(f'<rect class="mark" x="{sx(acc):.1f}" y="{y:.1f}" '
                        f'width="{max(0.5, sx(acc + v) - sx(acc)):.1f}" height="{bar - 2}" '
                        f'fill="{col}"><title>{escape(str(label))} · {part}: {_num(v)}'
                        f'</title></rect>')
            acc += v
    body.append(_x_label(left, width - right, height - 8, xlabel))
    for i, (part, col) in enumerate(parts.items()):
        body.append(f'<rect x="{width - right + 12}" y="{top + 14 * i}" width="10" height="10" '
                    f'fill="{col}"/><text x="{width - right + 26}" y="{top + 14 * i + 9}" '
                    f'{FONT}>{part}</text>')
    return _svg(width, height, body, title or xlabel)


def lines(series: dict, xlabel: str, ylabel: str, title: str = "", log_y: bool = True,
          dashed: Optional[dict] = None) -> str:
    """Line chart: {name: [(x, y), ...]} solid, ``dashed`` the same names' second figure."""
    pts = [(x, y) for s in (series, dashed or {}) for ps in s.values() for x, y in ps
           if y is not None and (y > 0 or not log_y)]
    if not pts:
        return ""
    left, right, top, bottom = 64, 200, 26, 44
    width, height = 660, 330
    sx = Scale(min(x for x, _ in pts), max(x for x, _ in pts), left, width - right)
    sy = Scale(min(y for _, y in pts), max(y for _, y in pts), height - bottom, top, log_y)
    body = [_title(left, title)]
    for t in sy.ticks():
        y = sy(t)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" '
                    f'stroke="#ddd"/><text x="{left - 4}" y="{y + 4:.1f}" {FONT} '
                    f'text-anchor="end">{_num(t)}</text>')
    for t in sx.ticks():
        x = sx(t)
        body.append(f'<text x="{x:.1f}" y="{height - bottom + 14}" {FONT} '
                    f'text-anchor="middle">{_num(t)}</text>')
    for style, group in (("", series), (' stroke-dasharray="4 3" opacity="0.6"', dashed or {})):
        for i, (name, ps) in enumerate(group.items()):
            ps = [(x, y) for x, y in ps if y is not None and (y > 0 or not log_y)]
            if not ps:
                continue
            i = list(series).index(name) if name in series else i
            path = " ".join(f"{'M' if k == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}"
                            for k, (x, y) in enumerate(ps))
            body.append(f'<path class="mark" d="{path}" fill="none" stroke="{colour(i)}" '
                        f'stroke-width="1.6"{style}><title>{escape(name)}</title></path>')
            if not style:
                body += [f'<circle class="mark" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" '
                         f'fill="{colour(i)}"><title>{escape(name)}: {_num(x)} → {_num(y)}'
                         f'</title></circle>' for x, y in ps]
    body.append(_x_label(left, width - right, height - 8, xlabel))
    body.append(f'<text transform="translate(14,{(top + height - bottom) / 2:.0f}) rotate(-90)" '
                f'{FONT} text-anchor="middle">{escape(ylabel)}</text>')
    body += _legend(list(series), width - right + 12, top + 10)
    return _svg(width, height, body, title or ylabel)
