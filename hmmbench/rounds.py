"""The interleaved regression gate (``hmmbench gate``): verdicts from rounds of A/B runs.

Baseline and candidate run alternately, round after round, each round's order the reverse of
the one before (A B, B A, A B, ...; asv's ``continuous`` interleaves the same way), so whatever
else loads the machine meanwhile falls on both alike. Each round's two runs are compared as two
files are (:func:`hmmbench.compare.compare`: cells matched by name and data bytes; other
hardware, clocks or bytes are ``not comparable``; a mismatch or an error fails), which gives
every cell one ratio per round: candidate / baseline of the compared stage's median time.

A cell is ``slower`` when two things hold. The change is real: a sign test on the round ratios,
the distribution-free ``LEVEL`` interval of their median (order statistics,
:func:`hmmbench.stats.order_rank`) lies wholly above 1 -- at 5-7 rounds every round slower, at
8-10 all but one. And it is large: the median ratio is beyond ``1 + max_slowdown``. With the
same code on both sides the two runs of a round are exchangeable, so each round is slower with
probability 1/2, whatever the load: same code passes the first test by chance in at most 1 gate
in 2^5 = 32 (5 rounds) on any machine, busy or not, the rounds taken as independent, and must
pass the second as well; drift slower than a round cancels in each ratio. ``faster`` likewise
below 1 and ``1 / (1 + max_slowdown)``; else ``within noise`` (the note says which test failed).

The rounds stop early once every cell's verdict is settled (:func:`settled`): a round each way
(one slower, one faster) already rules out 5 of 5 on either side, so same code usually costs two
or three rounds, and the verdict is the one all planned rounds would give.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import stats
from .compare import FASTER, SLOWER, WITHIN_NOISE, Comparison, Row, compare

#: two-sided level of the interval of the median round ratio (one-sided 95 % either way)
LEVEL = 0.90
#: the fewest rounds that can show a change at LEVEL (every round slower, or faster)
MIN_ROUNDS = next(n for n in range(1, 64) if stats.order_rank(n, LEVEL))
DEFAULT_ROUNDS = MIN_ROUNDS
TIMED = (SLOWER, FASTER, WITHIN_NOISE)


def needed(planned: int) -> int:
    """Rounds that must be slower (or faster) for the change to be real, out of ``planned``:
    all but j - 1, j the rank of the median interval's ends."""
    j = stats.order_rank(planned, LEVEL)
    return planned - j + 1 if j else planned + 1


def majority(planned: int) -> int:
    """Rounds beyond a bound that put the median of ``planned`` rounds beyond it for sure."""
    return planned // 2 + 1


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

    def outlook(self, planned: int, limit: float) -> dict:
        """For each direction ("slower", "faster"): "certain" when the verdict holds whatever
        the remaining rounds give, "impossible" when no remaining rounds can bring it, else
        "open"."""
        left, need, most = planned - len(self.ratios), needed(planned), majority(planned)
        out = {}
        for name, real, large in ((SLOWER, lambda r: r > 1.0, lambda r: r > limit),
                                  (FASTER, lambda r: r < 1.0, lambda r: r < 1.0 / limit)):
            n_real = sum(map(real, self.ratios))
            n_large = sum(map(large, self.ratios))
            if n_real >= need and n_large >= most:
                out[name] = "certain"
            elif n_real + left < need or n_large + left < most:
                out[name] = "impossible"
            else:
                out[name] = "open"
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
    test of its round ratios against ``planned`` rounds (see the module docstring)."""
    if cell.other is not None:
        row = cell.other
        row.note = f"round {cell.other_round}: {row.note}" if row.note else \
            f"round {cell.other_round}"
        return row
    limit, need = 1.0 + max_slowdown / 100.0, needed(planned)
    ratio = stats.median(cell.ratios)
    outlook = cell.outlook(planned, limit)
    interval = stats.median_interval(cell.ratios, LEVEL)
    span = (f"; {LEVEL * 100:.0f} % interval of the median {interval[0]:.3g}-{interval[1]:.3g}x"
            if interval else "")
    ran, detail = len(cell.ratios), f"round ratios {_ratios_text(cell.ratios)}{span}"
    way = SLOWER if ratio >= 1.0 else FASTER
    n_way = sum((r > 1.0) if way == SLOWER else (r < 1.0) for r in cell.ratios)
    if outlook[way] == "certain":
        v = way
        note = (f"{n_way} of {ran} rounds {way} ({need} of {planned} needed), the median beyond "
                f"the {max_slowdown:g} % threshold; {detail}")
    elif max(ratio, 1.0 / ratio) <= limit:
        v, note = WITHIN_NOISE, f"within the {max_slowdown:g} % threshold; {detail}"
    else:
        v = WITHIN_NOISE
        note = (f"beyond {max_slowdown:g} % but only {n_way} of {ran} rounds {way} ({need} of "
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

