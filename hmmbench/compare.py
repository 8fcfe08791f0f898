"""The regression gate: compare a candidate result file against a baseline.

Runs are matched by (dataset, backend, chunking); profile runs by (database, backend, model and
score kind). Whole-pipeline peers (status ``peer``) are listed with their change, never gated. A matched run fails when its median total time
grew by more than ``max_slowdown`` percent, or when the candidate's status is ``mismatch`` (always a failure, even
without a baseline counterpart) or ``error`` (a failure unless the baseline run errored the same
way already: a known-broken backend is listed, not failed again). Runs present in only one file
are listed, not failed; so are runs unavailable in one of them (a GPU baseline checked on a CPU
machine).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .report import fmt_seconds

FAILING_STATUSES = ("mismatch", "error")


@dataclass
class Row:
    key: tuple
    baseline_s: Optional[float]
    candidate_s: Optional[float]
    change_pct: Optional[float]
    verdict: str          # ok | faster | slower | mismatch | error | only-baseline | ...
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


def _key(run: dict) -> tuple:
    if run.get("workload") == "profile":
        return (run["dataset"], run["backend"], f"{run.get('model')} × {run.get('kind')}")
    return (run["dataset"], run["backend"], run.get("chunking", ""))


def _total(run: dict) -> Optional[float]:
    t = (run.get("timing_s") or {}).get("total")
    return float(t) if t else None


def compare(baseline: dict, candidate: dict, max_slowdown: float = 10.0) -> Comparison:
    base = {_key(r): r for r in baseline["runs"]}
    cand = {_key(r): r for r in candidate["runs"]}
    out = Comparison(max_slowdown=max_slowdown)
    for key, c in cand.items():
        b = base.get(key)
        ct = _total(c)
        bt = _total(b) if b else None
        change = (ct / bt - 1.0) * 100.0 if (ct and bt) else None
        if c["status"] == "error" and b is not None and b["status"] == "error":
            out.rows.append(Row(key, bt, ct, None, "error (also in baseline)", False,
                                c.get("reason", "")))
        elif c["status"] in FAILING_STATUSES:
            out.rows.append(Row(key, bt, ct, change, c["status"], True, c.get("reason", "")))
        elif c["status"] == "peer":
            out.rows.append(Row(key, bt, ct, change, "peer (not gated)", False))
        elif b is None:
            out.rows.append(Row(key, None, ct, None, "only-candidate", False))
        elif change is None:
            note = c.get("reason") or b.get("reason") or ""
            out.rows.append(Row(key, bt, ct, None, f"not-compared ({c['status']})", False, note))
        elif change > max_slowdown:
            out.rows.append(Row(key, bt, ct, change, "slower", True,
                                f"more than {max_slowdown:g} % slower"))
        else:
            out.rows.append(Row(key, bt, ct, change, "faster" if change < -max_slowdown else "ok",
                                False))
    for key, b in base.items():
        if key not in cand:
            out.rows.append(Row(key, _total(b), None, None, "only-baseline", False))
    return out


def render(comp: Comparison, console=None, baseline_name: str = "baseline",
           candidate_name: str = "candidate") -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    console = console or Console()
    t = Table(title=f"compare: {candidate_name} vs {baseline_name} "
                    f"(max slowdown {comp.max_slowdown:g} %)", title_justify="left")
    profile = any(" × " in r.key[2] for r in comp.rows)
    for col in ("dataset", "backend", "model × kind" if profile else "chunking"):
        t.add_column(col, no_wrap=True)
    t.add_column("baseline", justify="right", no_wrap=True)
    t.add_column("candidate", justify="right", no_wrap=True)
    t.add_column("change", justify="right", no_wrap=True)
    t.add_column("verdict", no_wrap=True)
    t.add_column("note")
    for r in comp.rows:
        style = "bold red" if r.failed else ("green" if r.verdict in ("ok", "faster") else "dim")
        t.add_row(*r.key, fmt_seconds(r.baseline_s), fmt_seconds(r.candidate_s),
                  "-" if r.change_pct is None else f"{r.change_pct:+.1f} %",
                  Text(r.verdict, style=style), r.note)
    console.print(t)
    n_fail = sum(r.failed for r in comp.rows)
    console.print(Text(f"FAIL: {n_fail} run(s) failed the gate" if n_fail else "PASS",
                       style="bold red" if n_fail else "bold green"))
