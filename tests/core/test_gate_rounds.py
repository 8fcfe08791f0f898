"""The interleaved gate (hmmbench gate, hmmbench.rounds): the sign test on synthetic round ratios,
its error rates on simulated noise (seeded), when the rounds stop, the verdicts that are not
about time, and the command end to end with stand-in hmmbench commands (no wall-clock timing:
the stand-in writes the times it is told to)."""
from __future__ import annotations

import copy
import json
import math
import sys

import numpy as np
import pytest

from hmmbench import cli, rounds

from helpers.records import document, run


def pair(base_s: dict, cand_s: dict) -> tuple:
    """(baseline document, candidate document) of one round: {backend: total seconds}."""
    return (document([run("10s", b, t) for b, t in base_s.items()]),
            document([run("10s", b, t) for b, t in cand_s.items()]))


def gated(ratios: list, planned: int = None, max_slowdown: float = 10.0):
    """The one row of a cell whose rounds gave these candidate / baseline ratios."""
    docs = [pair({"cpu-a": 1.0}, {"cpu-a": r}) for r in ratios]
    comp = rounds.compare_rounds(docs, planned, max_slowdown)
    assert len(comp.rows) == 1
    return comp, comp.rows[0]


def test_every_round_slower_and_the_median_beyond_the_threshold_fails():
    comp, row = gated([1.5, 1.45, 1.6, 1.05, 1.48])
    assert row.verdict == "slower" and row.failed and comp.exit_code == 1
    assert row.change_pct == pytest.approx(48.0)
    assert "5 of 5 rounds slower" in row.note and "1.05" in row.note
    assert row.interval == (1.05, 1.6)      # 5 rounds at 90 %: the smallest and largest ratio


def test_one_round_faster_passes_at_five_rounds():
    comp, row = gated([1.5, 1.45, 1.6, 0.98, 1.48])
    assert row.verdict == "within noise" and comp.exit_code == 0
    assert "only 4 of 5 rounds slower" in row.note and "5 of 5 needed" in row.note


def test_eight_rounds_forgive_one():
    _, row = gated([1.5, 1.45, 1.6, 0.95, 1.48, 1.5, 1.52, 1.47])
    assert row.verdict == "slower" and "7 of 8" in row.note
    _, row = gated([1.5, 1.45, 1.6, 0.95, 0.99, 1.5, 1.52, 1.47])
    assert row.verdict == "within noise"


def test_faster_and_within_the_threshold():
    assert gated([0.6, 0.62, 0.58, 0.61, 0.6])[1].verdict == "faster"
    # every round slower, but by less than the threshold: within noise, not a failure
    _, row = gated([1.04, 1.03, 1.02, 1.01, 1.05])
    assert row.verdict == "within noise" and "within the 10 % threshold" in row.note
    # a large change in the median that the rounds do not all show is noise, not a slowdown
    _, row = gated([2.0, 0.9, 1.8, 1.7, 1.9])
    assert row.verdict == "within noise" and not row.failed


def test_too_few_rounds_cannot_fail():
    assert rounds.MIN_ROUNDS == 5 and rounds.needed(5) == 5 and rounds.needed(8) == 7
    _, row = gated([3.0, 3.0, 3.0])         # planned as 3: no sign test at 90 % has a verdict
    assert row.verdict == "within noise"


def _simulate(true_ratio: float, noise: float, n: int, seed: int) -> float:
    """Share of n simulated 5-round gates that fail: each round's two runs get independent
    lognormal noise (sd ``noise``) and one drift factor for the round (it falls on both)."""
    rng = np.random.default_rng(seed)
    fails = 0
    for _ in range(n):
        cell = rounds.Cell(("10s", "cpu-a", "original", ""))
        for _ in range(5):
            drift = math.exp(rng.normal(0, 0.5))
            b = drift * math.exp(rng.normal(0, noise))
            c = drift * true_ratio * math.exp(rng.normal(0, noise))
            cell.ratios.append(c / b)
            cell.baseline_s.append(b)
            cell.candidate_s.append(c)
        fails += rounds.verdict(cell, 5, 10.0).failed
    return fails / n


def test_error_rates_on_simulated_noise():
    """Same code: at most 1 gate in 32 on any noise (the sign test's bound), far fewer at a
    shared machine's 5-10 % per run; a 1.5x slowdown fails nearly always at 10 % per run, and
    still mostly at 15 % (a gate of two such cells then fails in ~98 %)."""
    assert _simulate(1.0, 0.05, 4000, seed=1) < 0.005
    assert _simulate(1.0, 0.10, 4000, seed=2) < 0.02
    assert _simulate(1.0, 1.00, 4000, seed=3) < 1 / 32 + 0.01
    assert _simulate(1.5, 0.10, 4000, seed=4) > 0.95
    assert _simulate(1.5, 0.15, 4000, seed=5) > 0.8


def test_rounds_stop_once_settled():
    up, down = pair({"a": 1.0, "b": 2.0}, {"a": 1.02, "b": 2.05}), \
        pair({"a": 1.0, "b": 2.0}, {"a": 0.98, "b": 1.9})
    assert not rounds.settled([up], 5)                      # 5 of 5 slower still possible
    assert rounds.settled([up, down], 5)                    # ruled out both ways
    small = [pair({"a": 1.0}, {"a": 1.02})] * 3
    assert rounds.settled(small, 5)                         # the median cannot pass 10 %
    slow = [pair({"a": 1.0}, {"a": 1.5})] * 4
    assert not rounds.settled(slow, 5)                      # a fifth round decides
    assert rounds.settled(slow + [pair({"a": 1.0}, {"a": 1.5})], 5)
    assert not rounds.settled(slow + [pair({"a": 1.0}, {"a": 1.5})], 8)
    assert rounds.settled(slow + slow[:3], 8)               # 7 of 8 reached


def test_a_round_on_other_bytes_is_not_comparable_and_a_mismatch_fails():
    base, cand = pair({"a": 1.0}, {"a": 1.0})
    other = copy.deepcopy(cand)
    other["runs"][0]["dataset_sha256"] = "f" * 64
    comp = rounds.compare_rounds([(base, cand), (base, other)], 5)
    row = comp.rows[0]
    assert row.verdict == "not comparable" and row.note.startswith("round 2:")
    assert comp.exit_code == 0
    bad = copy.deepcopy(cand)
    bad["runs"][0]["status"] = "mismatch"
    comp = rounds.compare_rounds([(base, cand), (base, bad)], 5)
    assert comp.rows[0].verdict == "mismatch" and comp.exit_code == 1
    assert rounds.settled([(base, bad)], 5)


def test_the_stage_compared():
    docs = []
    for _ in range(5):
        base, cand = pair({"gpu": 1.0}, {"gpu": 1.0})
        cand["runs"][0]["timing_s"]["kernel"] = 0.5 * 1.2      # the kernel 20 % slower
        docs.append((base, cand))
    assert rounds.compare_rounds(docs, 5).rows[0].verdict == "within noise"
    comp = rounds.compare_rounds(docs, 5, stage="kernel")
    assert comp.rows[0].verdict == "slower" and comp.stage == "kernel"


def write_rounds(folder, ratios):
    folder.mkdir()
    for i, r in enumerate(ratios, 1):
        for side, doc in zip(("baseline", "candidate"), pair({"cpu-a": 1.0}, {"cpu-a": r})):
            (folder / f"round-{i:02d}.{side}.json").write_text(json.dumps(doc))


def test_judge_an_existing_folder(tmp_path, capsys):
    write_rounds(tmp_path / "slow", [1.5] * 5)
    assert cli.main(["gate", "--out", str(tmp_path / "slow"), "--judge"]) == 1
    out = capsys.readouterr().out
    assert "slower" in out and "5 interleaved round(s)" in out and "FAIL" in out
    write_rounds(tmp_path / "same", [1.02, 0.97])     # settled: within noise
    assert cli.main(["gate", "--out", str(tmp_path / "same"), "--judge", "--format",
                     "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["rounds"] == [2, 5] and shown["rows"][0]["verdict"] == "within noise"


@pytest.mark.parametrize("argv,message", [
    (["--rounds", "4", "--", "-d", "tiny"], "--rounds must be between 5"),
    (["--", "-d", "tiny", "--json", "x.json"], "the gate sets the runs' result files"),
    ([], "give the `hmmbench run` arguments after --"),
    (["--judge"], "no round files"),
])
def test_usage_errors_exit_2(tmp_path, capsys, argv, message):
    assert cli.main(["gate", "--out", str(tmp_path / "g"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hmmbench: error:") and message in err


def test_earlier_round_files_are_never_overwritten(tmp_path, capsys):
    write_rounds(tmp_path / "g", [1.0])
    before = (tmp_path / "g" / "round-01.candidate.json").read_text()
    assert cli.main(["gate", "--out", str(tmp_path / "g"), "--", "-d", "tiny"]) == 2
    assert "holds round files of an earlier gate" in capsys.readouterr().err
    assert (tmp_path / "g" / "round-01.candidate.json").read_text() == before


#: A stand-in for `hmmbench`: `STANDIN LOG SIDE SECONDS run ... --json PATH --quiet` appends SIDE
#: to LOG and writes a result document whose one run took SECONDS.
STANDIN = """
import json, sys
sys.path[:0] = {path!r}
from helpers.records import document, run
log, side, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
open(log, "a").write(side + "\\n")
out = sys.argv[sys.argv.index("--json") + 1]
open(out, "w").write(json.dumps(document([run("10s", "cpu-a", seconds)])))
"""


def standin_cmd(tmp_path, side: str, seconds: float) -> str:
    script = tmp_path / "standin.py"
    script.write_text(STANDIN.format(path=sys.path))
    return f"{sys.executable} {script} {tmp_path / 'order.log'} {side} {seconds}"


def test_interleaved_runs_alternate_and_stop_when_settled(tmp_path, capsys):
    argv = ["gate", "--out", str(tmp_path / "slow"),
            "--baseline-cmd", standin_cmd(tmp_path, "A", 1.0),
            "--candidate-cmd", standin_cmd(tmp_path, "B", 1.5), "--", "-d", "10s"]
    assert cli.main(argv) == 1
    order = (tmp_path / "order.log").read_text().split()
    assert order == ["A", "B", "B", "A", "A", "B", "B", "A", "A", "B"]   # 5 rounds, ABBA
    assert "slower" in capsys.readouterr().out
    (tmp_path / "order.log").unlink()
    argv = ["gate", "--out", str(tmp_path / "same"),
            "--baseline-cmd", standin_cmd(tmp_path, "A", 1.0),
            "--candidate-cmd", standin_cmd(tmp_path, "B", 1.0), "--", "-d", "10s"]
    assert cli.main(argv) == 0
    assert (tmp_path / "order.log").read_text().split() == ["A", "B"]   # settled after one
    assert "every verdict settled after 1 of 5 rounds" in capsys.readouterr().err


def test_a_failing_run_is_one_line_naming_it(tmp_path, capsys):
    argv = ["gate", "--out", str(tmp_path / "g"), "--baseline-cmd",
            f"{sys.executable} -c 'import sys; sys.exit(\"no such dataset\")'", "--", "-d", "x"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "round 1 baseline" in err and "no such dataset" in err
