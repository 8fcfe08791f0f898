"""The regression gate: compare a candidate result file against a baseline.

Runs are matched by (dataset, backend, chunking) plus whatever cell axes the records carry
(:func:`hmmbench.results.cell_axes`: a profile run's model and score kind), and by content: a
dataset of the same name but other bytes (its ``dataset_sha256``) is not the same cell. Each
match gets a verdict, as data (:class:`Row`; the printers of :mod:`hmmbench.report` render it):

- ``slower`` (fails) / ``faster``: the ratio of the median total times is beyond ``max_slowdown``
  percent, and the noise cannot explain it: the 95 % bootstrap interval of that ratio (from the
  timed samples; the min/max ranges for files without samples) lies wholly beyond the
  threshold, and the ratio beyond the threshold widened by the noise floor;
- ``within noise``: within the threshold, or not shown beyond the noise (the note says which);
- ``not comparable``: other hardware (device, driver, host CPU), other clocks (a throttled run,
  or top SM clocks 10 % apart) or other data bytes under the same dataset name; the note names
  the cause and the ratio is shown, never gated.

The noise floor is the run-to-run noise that one run's samples do not show (two runs a minute
apart on a shared machine differ by more than the passes within either): the larger of
``noise_floor`` (the machine's own figure, e.g. measured with ``scripts/gate_rates.py``) and
the baseline's own relative spread, (max - min) / median of its passes. The baseline's, not the
candidate's: a slowdown that widens the candidate's spread (a busy neighbour) must not excuse
itself.

Correctness gates regardless: a candidate ``mismatch`` always fails (even without a baseline
counterpart), an ``error`` fails unless the baseline errored the same way (a known-broken backend
is listed, not failed again). Whole-pipeline peers (``peer``) are listed, never gated; runs in
only one file, or unavailable in one (a GPU baseline checked on a CPU machine), are listed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import stats
from .results import SAMPLES_FIELD, cell_axes, run_label

FAILING_STATUSES = ("mismatch", "error")
SLOWER, FASTER, WITHIN_NOISE, NOT_COMPARABLE = ("slower", "faster", "within noise",
                                                "not comparable")
#: SM clocks this far apart (top clock of one run over the other's) make runs not comparable.
CLOCK_TOLERANCE = 0.10


@dataclass
class Row:
    key: tuple            # dataset, backend, chunking, cell axes ("" when none)
    baseline_s: Optional[float]
    candidate_s: Optional[float]
    change_pct: Optional[float]
    verdict: str          # slower | faster | within noise | not comparable | mismatch | ...
    failed: bool
    note: str = ""
    #: not comparable: what differs (device, driver, host, clocks, data bytes), else ""
    cause: str = ""
    #: the 95 % interval of the candidate / baseline time ratio, when the noise was measured
    interval: Optional[tuple] = None
    #: the noise floor the verdict allowed for, percent
    noise_floor_pct: Optional[float] = None


@dataclass
class Comparison:
    rows: list = field(default_factory=list)
    max_slowdown: float = 10.0
    noise_floor: float = 0.0
    #: the timed stage compared (total: the whole call)
    stage: str = "total"
    #: interleaved rounds (hmmbench gate): (rounds run, rounds planned); None for two files
    rounds: Optional[tuple] = None

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    @property
    def not_comparable(self) -> int:
        return sum(r.verdict == NOT_COMPARABLE for r in self.rows)


def match_key(run: dict) -> tuple:
    axes = " × ".join(str(v) for v in cell_axes(run).values())
    # run_label: a cluster run's worker count or fleet worker tells its rows apart
    return (run["dataset"], run_label(run), run.get("chunking", ""), axes)


def same_data(a: dict, b: dict) -> bool:
    """Whether two runs' datasets hold the same bytes (an unrecorded sha256 is not a
    difference)."""
    sa, sb = a.get("dataset_sha256"), b.get("dataset_sha256")
    return not (sa and sb) or sa == sb


def data_difference(base: dict, cand: dict) -> str:
    """'' when both runs ran the same bytes, else what differs."""
    if same_data(base, cand):
        return ""
    return (f"data bytes: '{cand['dataset']}' is sha256 {cand['dataset_sha256'][:12]} here, "
            f"{base['dataset_sha256'][:12]} in the baseline")


def check_stage(stage: str, docs: list) -> None:
    """Refuses a ``--stage`` that no run of the result files ``docs`` timed: compared on it,
    every cell would be 'not-compared' and the gate would pass having compared nothing."""
    timed = {k for doc in docs for r in doc.get("runs", []) for k in (r.get("timing_s") or {})}
    if stage not in timed:
        from .errors import UserError
        raise UserError(f"--stage '{stage}': no run of the result files timed that stage (they "
                        f"time: {', '.join(sorted(timed)) or 'nothing'})")


def _total(run: dict, stage: str = "total") -> Optional[float]:
    """The run's median time of ``stage`` (``total``: the whole timed call)."""
    t = (run.get("timing_s") or {}).get(stage)
    return float(t) if t else None


def hardware(doc: dict, run: dict) -> dict:
    """What a run's speed depends on beyond the code: its device, the driver, the host CPU."""
    out = {"device": run.get("device") or "", "host": (doc.get("host") or {}).get("cpu", "")}
    for d in doc.get("devices") or []:
        if d.get("api") == run.get("api") and run.get("backend") in (d.get("backends") or []):
            out.update({k: str(v) for k, v in d.items() if "driver" in k.lower()})
    return out


def hardware_difference(base: dict, cand: dict) -> str:
    """'' when the hardware is the same, else what differs ("device A -> B; ..."). What only one
    file recorded (a driver version older files lack) is unknown, not a difference."""
    return "; ".join(f"{k} {base[k]} -> {cand[k]}" for k in sorted(set(base) & set(cand))
                     if base[k] != cand[k])


def clock_difference(base: dict, cand: dict) -> str:
    """'' when the runs' GPU clocks are alike (or unrecorded), else what differs: a throttled
    run, or top SM clocks more than CLOCK_TOLERANCE apart."""
    bi, ci = base.get("info") or {}, cand.get("info") or {}
    for name, info in (("baseline", bi), ("candidate", ci)):
        if info.get("throttled"):
            low = info.get("sm_clock_mhz_min")
            return f"clocks: the {name} was throttled" + (f" (SM clock down to {low:g} MHz)"
                                                          if low else "")
    hb, hc = bi.get("sm_clock_mhz_max"), ci.get("sm_clock_mhz_max")
    if hb and hc and abs(hc / hb - 1.0) > CLOCK_TOLERANCE:
        return f"clocks: top SM clock {hb:g} -> {hc:g} MHz"
    return ""


def _samples(run: dict, stage: str = "total") -> list:
    """The timed passes of a run's ``stage``, else its (min, max) range, else [] (one pass: no
    noise measured)."""
    got = (run.get(SAMPLES_FIELD) or {}).get(stage) or []
    if len(got) >= 2:
        return [float(x) for x in got]
    lo = (run.get("timing_min_s") or {}).get(stage)
    hi = (run.get("timing_max_s") or {}).get(stage)
    return [float(lo), float(hi)] if lo and hi and hi > lo else []


def file_spread(doc: dict, stage: str = "total") -> float:
    """The median relative spread of a file's runs that have one: how noisy the machine was
    while it ran (0 when no run says)."""
    spreads = [x for x in (stats.spread(_samples(r, stage)) for r in doc["runs"]
                           if r.get("status") == "ok") if x is not None]
    return stats.median(spreads) if spreads else 0.0


def noise_verdict(b: dict, c: dict, max_slowdown: float, noise_floor: float = 0.0,
                  machine_spread: float = 0.0, stage: str = "total") -> tuple:
    """(verdict, note, interval, floor %) of a timing change between two comparable runs;
    ``machine_spread``: the baseline file's (:func:`file_spread`), the floor of a run that
    timed one pass only."""
    bt, ct = _total(b, stage), _total(c, stage)
    ratio, limit = ct / bt, 1.0 + max_slowdown / 100.0
    bs, cs = _samples(b, stage), _samples(c, stage)
    kept = all(len((r.get(SAMPLES_FIELD) or {}).get(stage) or []) >= 2 for r in (b, c))
    interval = stats.ratio_interval(bs, cs) if bs and cs else None
    own = stats.spread(bs)
    spread = machine_spread if own is None else own
    floor = max(noise_floor / 100.0, spread)
    floor_pct = floor * 100.0
    how = ("95 % interval of the ratio" if kept else "min/max ranges (no samples stored)") \
        if interval else "one pass: no interval"
    span = f"{how} {interval[0]:.3g}-{interval[1]:.3g}x" if interval else how
    lo, hi = interval or (ratio, ratio)
    slower = ratio > 1.0
    if max(ratio, 1.0 / ratio) <= limit:
        return WITHIN_NOISE, f"within the {max_slowdown:g} % threshold", interval, floor_pct
    if (lo > limit and ratio > limit * (1.0 + floor)) if slower else \
            (hi < 1.0 / limit and ratio < 1.0 / (limit * (1.0 + floor))):
        return (SLOWER if slower else FASTER), f"{span}; noise floor {floor_pct:.0f} %", \
            interval, floor_pct
    if (lo <= limit) if slower else (hi >= 1.0 / limit):
        why = f"the samples overlap: {span}"
    else:
        source = ("--noise-floor" if spread < noise_floor / 100.0 else "the baseline's spread"
                  if spread is own else "the baseline file's median spread")
        why = f"within the noise floor of {floor_pct:.0f} % ({source}); {span}"
    return WITHIN_NOISE, f"beyond {max_slowdown:g} % but {why}", interval, floor_pct


def _partner(c: dict, runs: list, used: set) -> Optional[dict]:
    """The baseline run of ``c``'s cell: one with the same data bytes first, else any left (a
    same-named dataset of other bytes: not comparable)."""
    left = [b for b in runs if id(b) not in used]
    return next((b for b in left if same_data(b, c)), left[0] if left else None)


def compare(baseline: dict, candidate: dict, max_slowdown: float = 10.0,
            noise_floor: float = 0.0, stage: str = "total") -> Comparison:
    """The verdict of every candidate run against its baseline run (see the module docstring);
    ``max_slowdown`` and ``noise_floor`` in percent; ``stage``: the timed stage compared
    (``total``, or e.g. ``kernel`` for a GPU kernel's own time)."""
    base: dict = {}
    for r in baseline["runs"]:
        base.setdefault(match_key(r), []).append(r)
    out = Comparison(max_slowdown=max_slowdown, noise_floor=noise_floor, stage=stage)
    machine = file_spread(baseline, stage)
    used: set = set()
    for c in candidate["runs"]:
        key = match_key(c)
        b = _partner(c, base.get(key, []), used)
        if b is not None:
            used.add(id(b))
        ct = _total(c, stage)
        bt = _total(b, stage) if b else None
        change = (ct / bt - 1.0) * 100.0 if (ct and bt) else None
        causes = {name: text for name, text in (
            ("data bytes", data_difference(b, c)),
            ("hardware", hardware_difference(hardware(baseline, b), hardware(candidate, c))),
            ("clocks", clock_difference(b, c))) if text} if b else {}
        differs = "; ".join(causes.values())
        if c["status"] == "error" and b is not None and b["status"] == "error":
            out.rows.append(Row(key, bt, ct, None, "error (also in baseline)", False,
                                c.get("reason", "")))
        elif c["status"] in FAILING_STATUSES:
            out.rows.append(Row(key, bt, ct, change, c["status"], True, c.get("reason", "")))
        elif c["status"] == "peer":
            out.rows.append(Row(key, bt, ct, change, "peer (not gated)", False, differs))
        elif b is None:
            out.rows.append(Row(key, None, ct, None, "only-candidate", False))
        elif differs:
            ratio = f"speed ratio {bt / ct:.3g}x (candidate / baseline); " if change is not None \
                else ""
            out.rows.append(Row(key, bt, ct, change, NOT_COMPARABLE, False, ratio + differs,
                                cause=", ".join(causes)))
        elif change is None:
            note = c.get("reason") or b.get("reason") or ""
            out.rows.append(Row(key, bt, ct, None, f"not-compared ({c['status']})", False, note))
        else:
            verdict, note, interval, floor = noise_verdict(b, c, max_slowdown, noise_floor,
                                                           machine, stage)
            out.rows.append(Row(key, bt, ct, change, verdict, verdict == SLOWER, note,
                                interval=interval, noise_floor_pct=floor))
    for key, runs in base.items():
        for b in runs:
            if id(b) not in used:
                out.rows.append(Row(key, _total(b, stage), None, None, "only-baseline", False))
    return out
