"""The interleaved gate (hmmbench gate, hmmbench.rounds): the sign test against the threshold on
synthetic round ratios (same-code noise passes, a shift is caught, one outlier round flips
nothing), its error rates on simulated noise (seeded), when the rounds stop, the verdicts that
are not about time, and the command end to end with stand-in hmmbench commands (no wall-clock
timing: the stand-in writes the times it is told to)."""
from __future__ import annotations

import copy
import json
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


SLOW_9 = [1.5, 1.45, 1.6, 1.12, 1.48, 1.52, 1.47, 1.55, 1.5]


def test_eight_of_nine_rounds_beyond_the_threshold_fail():
    assert (rounds.LEVEL, rounds.MIN_ROUNDS, rounds.DEFAULT_ROUNDS) == (0.96, 6, 9)
    assert [rounds.needed(n) for n in (6, 8, 9, 10, 12)] == [6, 8, 8, 9, 10]
    comp, row = gated(SLOW_9)
    assert row.verdict == "slower" and row.failed and comp.exit_code == 1
    assert row.change_pct == pytest.approx(50.0)
    assert "9 of 9 rounds beyond +10 % (8 of 9 needed)" in row.note and "1.12" in row.note
    assert row.interval == (1.45, 1.55)     # 9 rounds at 96 %: the 2nd smallest and largest


@pytest.mark.parametrize("outlier", [0.6, 1.0, 1.08])
def test_one_outlier_round_does_not_pass_a_slowdown(outlier):
    _, row = gated(SLOW_9[:3] + [outlier] + SLOW_9[4:])
    assert row.verdict == "slower" and "8 of 9 rounds beyond" in row.note


@pytest.mark.parametrize("outlier", [1.5, 3.0, 40.0])
def test_one_outlier_round_does_not_fail_same_code(outlier):
    same = [1.02, 0.97, outlier, 1.04, 0.95, 1.01, 0.99, 1.03, 0.98]
    comp, row = gated(same)
    assert row.verdict == "within noise" and comp.exit_code == 0
    # nor does one outlier among rounds that all drift a little slower, even past the threshold
    _, row = gated([1.12, 1.15, outlier, 1.06, 1.13, 1.18, 1.09, 1.11, 1.14])
    assert row.verdict == "within noise" and "only 7 of 9 rounds beyond it" in row.note


def test_slower_in_most_rounds_but_within_the_threshold_passes():
    # every round slower, by less than the threshold: within noise, not a failure
    _, row = gated([1.04, 1.03, 1.02, 1.01, 1.05, 1.06, 1.02, 1.03, 1.04])
    assert row.verdict == "within noise" and "median within the 10 % threshold" in row.note
    # a large median change that the rounds do not show consistently is noise, not a slowdown
    _, row = gated([2.0, 0.9, 1.8, 1.7, 1.9, 0.8, 1.6, 1.05, 1.7])
    assert row.verdict == "within noise" and not row.failed


def test_faster_and_fewer_rounds():
    assert gated([0.6, 0.62, 0.58, 0.61, 0.6, 0.65, 1.3, 0.6, 0.59])[1].verdict == "faster"
    # 6-8 rounds: every round must be beyond the threshold
    assert gated(SLOW_9[:6])[1].verdict == "slower"
    assert gated(SLOW_9[:5] + [1.0])[1].verdict == "within noise"
    _, row = gated([3.0] * 5)               # planned as 5: no interval at 96 % has a verdict
    assert row.verdict == "within noise"


def _simulate(true_ratio: float, noise: float, n: int, seed: int, planned: int = 9) -> float:
    """Share of n simulated gates of ``planned`` rounds that fail: each round's two runs get
    independent lognormal noise (sd ``noise``) and one drift factor for the round (it falls on
    both, as interleaving makes it)."""
    rng = np.random.default_rng(seed)
    drift = np.exp(rng.normal(0, 0.5, (n, planned)))
    base = drift * np.exp(rng.normal(0, noise, (n, planned)))
    cand = drift * true_ratio * np.exp(rng.normal(0, noise, (n, planned)))
    fails = 0
    for b, c in zip(base.tolist(), cand.tolist()):
        cell = rounds.Cell(("10s", "cpu-a", "original", ""), [y / x for x, y in zip(b, c)], b, c)
        fails += rounds.verdict(cell, planned, 10.0).failed
    return fails / n


def test_error_rates_on_simulated_noise():
    """Same code: at most 2 % of cells on any noise (the sign test's bound: 8 of 9 rounds
    beyond the threshold), next to none at a shared machine's 5-10 % per run; a 1.5x slowdown
    fails nearly always at 10 % per run and mostly at 15 %; a 1.2x one at 3 %."""
    assert _simulate(1.0, 0.05, 2000, seed=1) == 0.0
    assert _simulate(1.0, 0.10, 2000, seed=2) < 0.002
    assert _simulate(1.0, 1.00, 4000, seed=3) < 10 / 512 + 0.006
    assert _simulate(1.5, 0.10, 2000, seed=4) > 0.97
    assert _simulate(1.5, 0.15, 2000, seed=5) > 0.8
    assert _simulate(1.2, 0.03, 2000, seed=6) > 0.97


def test_rounds_stop_once_settled():
    up, down = pair({"a": 1.0, "b": 2.0}, {"a": 1.12, "b": 2.5}), \
        pair({"a": 1.0, "b": 2.0}, {"a": 0.98, "b": 1.9})
    assert not rounds.settled([up], 9)                      # 8 of 9 still possible
    assert not rounds.settled([up, down], 9)                # "a": 1 beyond, 7 left: open
    assert rounds.settled([up, down, down], 9)              # ruled out both ways
    small = [pair({"a": 1.0}, {"a": 1.02})] * 2
    assert rounds.settled(small, 9)                         # two rounds inside: never 8 of 9
    slow = [pair({"a": 1.0}, {"a": 1.5})] * 7
    assert not rounds.settled(slow, 9)                      # an eighth round decides
    assert rounds.settled(slow + slow[:1], 9)               # 8 of 9 reached
    assert not rounds.settled(slow + slow[:1], 10)          # 9 of 10 needed


def test_a_round_on_other_bytes_is_not_comparable_and_a_mismatch_fails():
    base, cand = pair({"a": 1.0}, {"a": 1.0})
    other = copy.deepcopy(cand)
    other["runs"][0]["dataset_sha256"] = "f" * 64
    comp = rounds.compare_rounds([(base, cand), (base, other)], 9)
    row = comp.rows[0]
    assert row.verdict == "not comparable" and row.note.startswith("round 2:")
    assert comp.exit_code == 0
    bad = copy.deepcopy(cand)
    bad["runs"][0]["status"] = "mismatch"
    comp = rounds.compare_rounds([(base, cand), (base, bad)], 9)
    assert comp.rows[0].verdict == "mismatch" and comp.exit_code == 1
    assert rounds.settled([(base, bad)], 9)


def test_the_stage_compared():
    docs = []
    for _ in range(6):
        base, cand = pair({"gpu": 1.0}, {"gpu": 1.0})
        cand["runs"][0]["timing_s"]["kernel"] = 0.5 * 1.2      # the kernel 20 % slower
        docs.append((base, cand))
    assert rounds.compare_rounds(docs, 6).rows[0].verdict == "within noise"
    comp = rounds.compare_rounds(docs, 6, stage="kernel")
    assert comp.rows[0].verdict == "slower" and comp.stage == "kernel"


def write_rounds(folder, ratios):
    folder.mkdir()
    for i, r in enumerate(ratios, 1):
        for side, doc in zip(("baseline", "candidate"), pair({"cpu-a": 1.0}, {"cpu-a": r})):
            (folder / f"round-{i:02d}.{side}.json").write_text(json.dumps(doc))


def test_judge_an_existing_folder(tmp_path, capsys):
    write_rounds(tmp_path / "slow", [1.5] * 8)
    assert cli.main(["gate", "--out", str(tmp_path / "slow"), "--judge"]) == 1
    out = capsys.readouterr().out
    assert "slower" in out and "8 interleaved round(s)" in out and "FAIL" in out
    write_rounds(tmp_path / "same", [1.02, 0.97])     # settled: within noise
    assert cli.main(["gate", "--out", str(tmp_path / "same"), "--judge", "--format",
                     "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["rounds"] == [2, 9] and shown["rows"][0]["verdict"] == "within noise"


@pytest.mark.parametrize("argv,message", [
    (["--rounds", "5", "--", "-d", "tiny"], "--rounds must be between 6"),
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


#: A stand-in for `hmmbench`: `STANDIN LOG SIDE DOCUMENT run ... --json PATH --quiet` appends SIDE
#: to LOG and writes DOCUMENT (a result document, made here) to PATH; it imports nothing of ours.
STANDIN = """
import shutil, sys
log, side, doc = sys.argv[1], sys.argv[2], sys.argv[3]
open(log, "a").write(side + "\\n")
shutil.copyfile(doc, sys.argv[sys.argv.index("--json") + 1])
"""


def standin_cmd(tmp_path, side: str, seconds: float) -> str:
    """The stand-in for one side, its result document's one run taking ``seconds``."""
    script, doc = tmp_path / "standin.py", tmp_path / f"standin-{side}-{seconds}.json"
    script.write_text(STANDIN)
    doc.write_text(json.dumps(document([run("10s", "cpu-a", seconds)])))
    return f"{sys.executable} {script} {tmp_path / 'order.log'} {side} {doc}"


def test_interleaved_runs_alternate_and_stop_when_settled(tmp_path, capsys):
    argv = ["gate", "--out", str(tmp_path / "slow"),
            "--baseline-cmd", standin_cmd(tmp_path, "A", 1.0),
            "--candidate-cmd", standin_cmd(tmp_path, "B", 1.5), "--rounds", "6", "--", "-d",
            "10s"]
    assert cli.main(argv) == 1
    order = (tmp_path / "order.log").read_text().split()
    assert order == ["A", "B", "B", "A"] * 3                            # 6 rounds, ABBA
    assert "slower" in capsys.readouterr().out
    (tmp_path / "order.log").unlink()
    argv = ["gate", "--out", str(tmp_path / "same"),
            "--baseline-cmd", standin_cmd(tmp_path, "A", 1.0),
            "--candidate-cmd", standin_cmd(tmp_path, "B", 1.0), "--", "-d", "10s"]
    assert cli.main(argv) == 0
    assert (tmp_path / "order.log").read_text().split() == ["A", "B", "B", "A"]   # 2 inside
    assert "every verdict settled after 2 of 9 rounds" in capsys.readouterr().err


def test_a_failing_run_is_one_line_naming_it(tmp_path, capsys):
    argv = ["gate", "--out", str(tmp_path / "g"), "--baseline-cmd",
            f"{sys.executable} -c 'import sys; sys.exit(\"no such dataset\")'", "--", "-d", "x"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "round 1 baseline" in err and "no such dataset" in err
