"""The interleaved regression gate (``hmmbench gate``): verdicts from rounds of A/B runs.

Baseline and candidate run alternately, round after round, each round's order the reverse of
the one before (A B, B A, A B, ...; asv's ``continuous`` interleaves the same way), so whatever
else loads the machine meanwhile falls on both alike. Each round's two runs are compared as two
files are (:func:`hmmbench.compare.compare`: cells matched by name and data bytes; other
hardware, clocks or bytes are ``not comparable``; a mismatch or an error fails), which gives
every cell one ratio per round: candidate / baseline of the compared stage's median time.

A cell is ``slower`` when the distribution-free ``LEVEL`` interval of its median round ratio
(order statistics, :func:`hmmbench.stats.order_rank`) lies wholly beyond the threshold
``1 + max_slowdown``: at the default 9 rounds, 8 rounds beyond it (at 6-8 rounds every round,
at 12 all but two). That is a sign test against the threshold, and it holds two things at once:
the candidate is slower in a clear majority of the rounds, and by more than the threshold.
With the same code on both sides the two runs of a round are exchangeable, so a round lands
beyond the threshold with probability q < 1/2, whatever the load; 8 of 9 such rounds (taken as
independent) happen by chance in at most 10 / 512 = 2 % of cells when the threshold is within
the machine's noise (q -> 1/2), and far less when it is not (q is the machine's own same-code
spread: ``scripts/gate_rates.py`` measures it, docs/regression-gate.md records it). One contrary
round -- an outlier either way -- changes no verdict. ``faster`` likewise
below ``1 / (1 + max_slowdown)``; else ``within noise`` (the note says why).

The rounds stop early once every cell's verdict is settled (:func:`settled`): two rounds inside
the threshold already rule out 8 of 9 either way, so same code usually costs two rounds, a
slowdown eight, and the verdict is the one all planned rounds would give.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import stats
from .compare import FASTER, SLOWER, WITHIN_NOISE, Comparison, Row, compare

#: two-sided level of the interval of the median round ratio (one-sided 98 % either way): at
#: most 2 % of same-code cells are called slower, however noisy the machine
LEVEL = 0.96
#: the fewest rounds that can show a change at LEVEL (every round beyond the threshold)
MIN_ROUNDS = next(n for n in range(1, 64) if stats.order_rank(n, LEVEL))
#: the fewest rounds at which one contrary round (an outlier) changes no verdict
DEFAULT_ROUNDS = next(n for n in range(1, 64) if stats.order_rank(n, LEVEL) >= 2)
TIMED = (SLOWER, FASTER, WITHIN_NOISE)


def needed(planned: int) -> int:
    """Rounds that must lie beyond the threshold (either way) for a verdict, out of
    ``planned``: all but j - 1, j the rank of the median interval's ends."""
    j = stats.order_rank(planned, LEVEL)
    return planned - j + 1 if j else planned + 1


def _beyond(way: str, limit: float):
    return (lambda r: r > limit) if way == SLOWER else (lambda r: r < 1.0 / limit)


@dataclass
class Cell:
    """One cell across the rounds: its per-round ratios, or the first round that could not be
    timed against the baseline (not comparable, a mismatch, an error, one file only)."""
    key: tuple
    ratios: list = field(default_factory=list)
    baseline_s: list = field(default_factory=list)
    candidate_s: list = field(default_factory=list)
    other: Optional[Row] = None
    other_round: int = 0

    def beyond(self, way: str, limit: float) -> int:
        """Rounds whose ratio lies beyond the threshold ``limit`` in direction ``way``."""
        return sum(map(_beyond(way, limit), self.ratios))

    def outlook(self, planned: int, limit: float) -> dict:
        """For each direction ("slower", "faster"): "certain" when the verdict holds whatever
        the remaining rounds give, "impossible" when no remaining rounds can bring it, else
        "open"."""
        left, need = planned - len(self.ratios), needed(planned)
        out = {}
        for way in (SLOWER, FASTER):
            n = self.beyond(way, limit)
            out[way] = "certain" if n >= need else "impossible" if n + left < need else "open"
        return out


def cells(rounds: list, max_slowdown: float, stage: str) -> dict:
    """Every cell of ``rounds`` ((baseline document, candidate document) per round), in the
    order the first round lists them."""
    out: dict = {}
    for i, (base, cand) in enumerate(rounds, 1):
        seen: dict = {}
        for row in compare(base, cand, max_slowdown, stage=stage).rows:
            n = seen[row.key] = seen.get(row.key, 0) + 1     # same-named cells of other bytes
            cell = out.setdefault((row.key, n), Cell(row.key))
            if row.verdict in TIMED and cell.other is None:
                cell.ratios.append(row.candidate_s / row.baseline_s)
                cell.baseline_s.append(row.baseline_s)
                cell.candidate_s.append(row.candidate_s)
            elif row.verdict not in TIMED and (cell.other is None
                                               or row.failed and not cell.other.failed):
                cell.other, cell.other_round = row, i
    return out


def settled(rounds: list, planned: int, max_slowdown: float = 10.0,
            stage: str = "total") -> bool:
    """Whether more rounds (up to ``planned``) can change no cell's verdict: each cell is
    certain to be slower or faster, or can be neither, or was not timed in a round."""
    limit = 1.0 + max_slowdown / 100.0
    for cell in cells(rounds, max_slowdown, stage).values():
        if cell.other is not None:
            continue
        seen = set(cell.outlook(planned, limit).values())
        if "certain" not in seen and "open" in seen:
            return False
    return True


def _ratios_text(ratios: list) -> str:
    shown = ", ".join(f"{r:.3g}" for r in ratios[:10])
    return shown + (f", ... ({len(ratios)} rounds)" if len(ratios) > 10 else "")


def verdict(cell: Cell, planned: int, max_slowdown: float) -> Row:
    """The row of one cell: its non-timed verdict (with the round it came from), else the sign
    test of its round ratios against the threshold, out of ``planned`` rounds (see the module
    docstring)."""
    if cell.other is not None:
        row = cell.other
        row.note = f"round {cell.other_round}: {row.note}" if row.note else \
            f"round {cell.other_round}"
        return row
    limit, need = 1.0 + max_slowdown / 100.0, needed(planned)
    ratio = stats.median(cell.ratios)
    interval = stats.median_interval(cell.ratios, LEVEL)
    span = (f"; {LEVEL * 100:.0f} % interval of the median {interval[0]:.3g}-{interval[1]:.3g}x"
            if interval else "")
    ran, detail = len(cell.ratios), f"round ratios {_ratios_text(cell.ratios)}{span}"
    way = SLOWER if ratio >= 1.0 else FASTER
    n_way = cell.beyond(way, limit)
    bound = f"{'+' if way == SLOWER else '-'}{max_slowdown:g} %"
    if cell.outlook(planned, limit)[way] == "certain":
        v = way
        note = f"{n_way} of {ran} rounds beyond {bound} ({need} of {planned} needed); {detail}"
    elif max(ratio, 1.0 / ratio) <= limit:
        v, note = WITHIN_NOISE, f"median within the {max_slowdown:g} % threshold; {detail}"
    else:
        v = WITHIN_NOISE
        note = (f"median beyond {bound} but only {n_way} of {ran} rounds beyond it ({need} of "
                f"{planned} needed); {detail}")
    return Row(cell.key, stats.median(cell.baseline_s), stats.median(cell.candidate_s),
               (ratio - 1.0) * 100.0, v, v == SLOWER, note, interval=interval)


def compare_rounds(rounds: list, planned: Optional[int] = None, max_slowdown: float = 10.0,
                   stage: str = "total") -> Comparison:
    """The gate's verdict on interleaved rounds ((baseline document, candidate document) per
    round, in the order they ran); ``planned``: the rounds the gate was to run (default: those
    given), against which the sign test counts."""
    planned = max(planned or len(rounds), len(rounds))
    out = Comparison(max_slowdown=max_slowdown, stage=stage, rounds=(len(rounds), planned))
    out.rows = [verdict(c, planned, max_slowdown)
                for c in cells(rounds, max_slowdown, stage).values()]
    return out

