"""The regression gate: compare a candidate result file against a baseline.

Runs are matched by (dataset, backend, chunking) plus whatever cell axes the records carry
(:func:`hmmbench.results.cell_axes`: a profile run's model and score kind). For each match the
median total times give a change; the verdict:

- ``slower`` (fails) / ``faster``: the change is beyond ``max_slowdown`` percent AND outside the
  measured noise of both runs (a one-sided rank test on the timed samples, or non-overlapping
  min/max ranges for files without samples; :mod:`hmmbench.stats`);
- ``noisy``: beyond the threshold, but within the noise: not failed, rerun with more repeats;
- ``ok``: within the threshold;
- ``hardware comparison``: device, driver or host CPU differ, so a change is no regression; the
  ratio is shown, never failed.

Correctness gates regardless of hardware: a candidate ``mismatch`` always fails (even without a
baseline counterpart), an ``error`` fails unless the baseline errored the same way (a known-broken
backend is listed, not failed again). Whole-pipeline peers (``peer``) are listed, never gated;
runs in only one file, or unavailable in one (a GPU baseline checked on a CPU machine), are listed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import stats
from .results import SAMPLES_FIELD, cell_axes, run_label

FAILING_STATUSES = ("mismatch", "error")
HARDWARE = "hardware comparison"


@dataclass
class Row:
    key: tuple            # dataset, backend, chunking, cell axes ("" when none)
    baseline_s: Optional[float]
    candidate_s: Optional[float]
    change_pct: Optional[float]
    verdict: str          # ok | faster | slower | noisy | hardware comparison | mismatch | ...
    failed: bool
    note: str = ""


@dataclass
class Comparison:
    rows: list = field(default_factory=list)
    max_slowdown: float = 10.0

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


def match_key(run: dict) -> tuple:
    axes = " × ".join(str(v) for v in cell_axes(run).values())
    # run_label: a cluster run's worker count or fleet worker tells its rows apart
    return (run["dataset"], run_label(run), run.get("chunking", ""), axes)


def _total(run: dict) -> Optional[float]:
    t = (run.get("timing_s") or {}).get("total")
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


def noise_verdict(b: dict, c: dict, change: float, max_slowdown: float) -> tuple:
    """(verdict, note) of a timing change between two comparable runs."""
    slower = change > 0
    if abs(change) <= max_slowdown:
        return "ok", ""
    bs = (b.get(SAMPLES_FIELD) or {}).get("total") or []
    cs = (c.get(SAMPLES_FIELD) or {}).get("total") or []
    real = stats.change_is_real(bs, cs, slower)
    how = f"rank test on {len(bs)} + {len(cs)} samples"
    if real is None:
        rng = lambda r: ((r.get("timing_min_s") or {}).get("total"),  # noqa: E731
                         (r.get("timing_max_s") or {}).get("total"))
        real = stats.ranges_apart(rng(b), rng(c), slower)
        how = "min/max ranges (no samples stored)"
    if real is None:
        real, how = True, "no noise measured"
    spreads = [stats.spread(s) for s in (bs, cs)]
    noise = ", ".join(f"{name} spread {s * 100:.1f} %" for name, s in zip(("baseline", "candidate"),
                                                                            spreads) if s is not None)
    note = f"{how}{': ' + noise if noise else ''}"
    if not real:
        return "noisy", f"beyond {max_slowdown:g} % but within the noise ({note})"
    return ("slower" if slower else "faster"), note


def compare(baseline: dict, candidate: dict, max_slowdown: float = 10.0) -> Comparison:
    base = {match_key(r): r for r in baseline["runs"]}
    cand = {match_key(r): r for r in candidate["runs"]}
    out = Comparison(max_slowdown=max_slowdown)
    for key, c in cand.items():
        b = base.get(key)
        ct = _total(c)
        bt = _total(b) if b else None
        change = (ct / bt - 1.0) * 100.0 if (ct and bt) else None
        hw = hardware_difference(hardware(baseline, b), hardware(candidate, c)) if b else ""
        if c["status"] == "error" and b is not None and b["status"] == "error":
            out.rows.append(Row(key, bt, ct, None, "error (also in baseline)", False,
                                c.get("reason", "")))
        elif c["status"] in FAILING_STATUSES:
            out.rows.append(Row(key, bt, ct, change, c["status"], True, c.get("reason", "")))
        elif c["status"] == "peer":
            out.rows.append(Row(key, bt, ct, change, "peer (not gated)", False, hw))
        elif b is None:
            out.rows.append(Row(key, None, ct, None, "only-candidate", False))
        elif change is None:
            note = c.get("reason") or b.get("reason") or ""
            out.rows.append(Row(key, bt, ct, None, f"not-compared ({c['status']})", False, note))
        elif hw:
            out.rows.append(Row(key, bt, ct, change, HARDWARE, False,
                                f"speed ratio {bt / ct:.3g}x (candidate / baseline); {hw}"))
        else:
            verdict, note = noise_verdict(b, c, change, max_slowdown)
            out.rows.append(Row(key, bt, ct, change, verdict, verdict == "slower", note))
    for key, b in base.items():
        if key not in cand:
            out.rows.append(Row(key, _total(b), None, None, "only-baseline", False))
    return out
