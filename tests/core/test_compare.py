"""Compare gate: verdicts and exit codes on crafted result files; the noise model on synthetic
sample sets; rows matched by content (sha256) as well as name."""
from __future__ import annotations

import copy
import json

import pytest

from hmmbench import cli, compare

from helpers.records import document, run


BASE = document([run("10s", "cuda-a", 1.0), run("10s", "cuda-b", 2.0), run("1m", "cuda-a", 5.0)])


def write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def gate(tmp_path, cand, *extra):
    return cli.main(["compare", write(tmp_path, "base.json", BASE),
                     write(tmp_path, "cand.json", cand), *extra])


def test_identical_passes(tmp_path, capsys):
    assert gate(tmp_path, copy.deepcopy(BASE)) == 0
    assert "PASS" in capsys.readouterr().out


def test_slowdown_beyond_threshold_fails(tmp_path, capsys):
    cand = copy.deepcopy(BASE)
    cand["runs"][0] = run("10s", "cuda-a", 1.2)   # +20 %, outside the (zero) noise
    assert gate(tmp_path, cand) == 1
    assert "slower" in capsys.readouterr().out
    assert gate(tmp_path, cand, "--max-slowdown", "25") == 0


def test_speedup_and_small_noise_pass(tmp_path):
    cand = copy.deepcopy(BASE)
    cand["runs"][0]["timing_s"]["total"] = 0.5
    cand["runs"][1]["timing_s"]["total"] = 2.1   # +5 %
    assert gate(tmp_path, cand) == 0


def test_candidate_mismatch_or_error_fails(tmp_path):
    cand = copy.deepcopy(BASE)
    cand["runs"][2]["status"] = "mismatch"
    assert gate(tmp_path, cand) == 1
    cand = copy.deepcopy(BASE)
    cand["runs"][1]["status"] = "error"
    assert gate(tmp_path, cand) == 1
    # A mismatch fails even when the baseline has no such run.
    cand = copy.deepcopy(BASE)
    cand["runs"].append(run("tiny", "opencl-x", 1.0, status="mismatch"))
    assert gate(tmp_path, cand) == 1


def test_error_already_in_baseline_is_listed_not_failed(tmp_path):
    base = copy.deepcopy(BASE)
    base["runs"][1]["status"] = "error"
    cand = copy.deepcopy(base)
    comp = compare.compare(base, cand)
    assert comp.exit_code == 0
    assert any(r.verdict == "error (also in baseline)" for r in comp.rows)
    cand["runs"][1]["status"] = "mismatch"   # a mismatch never passes
    assert compare.compare(base, cand).exit_code == 1


def test_runs_in_one_file_only_are_listed_not_failed(tmp_path):
    cand = document([run("10s", "cuda-a", 1.0), run("10s", "new", 3.0)])
    comp = compare.compare(BASE, cand)
    verdicts = {r.key[:2]: r.verdict for r in comp.rows}
    assert verdicts[("10s", "new")] == "only-candidate"
    assert verdicts[("1m", "cuda-a")] == "only-baseline"
    assert comp.exit_code == 0


def test_chunking_is_part_of_the_key(tmp_path):
    cand = document([run("10s", "cuda-a", 9.0, chunking="merged")])
    comp = compare.compare(BASE, cand)
    assert comp.exit_code == 0
    assert {r.verdict for r in comp.rows} == {"only-candidate", "only-baseline"}


def test_unavailable_candidate_is_not_a_failure(tmp_path):
    cand = copy.deepcopy(BASE)
    cand["runs"][0].update(status="unavailable", timing_s={}, reason="no CUDA device")
    assert gate(tmp_path, cand) == 0


def test_bad_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert cli.main(["compare", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hmmbench: error: ") and "bad.json" in err[0]


def test_negative_threshold_rejected(tmp_path):
    with pytest.raises(SystemExit):
        cli.main(["compare"])  # argparse usage error
    assert gate(tmp_path, copy.deepcopy(BASE), "--max-slowdown", "-1") == 2


# --- the noise model: one synthetic sample set per verdict -------------------------------------

BASE_SAMPLES = [1.00, 1.01, 0.99, 1.02, 0.98]


def verdict_of(base_samples, cand_samples, **kw):
    base = document([run("10s", "cuda-a", 0, samples=base_samples)])
    cand = document([run("10s", "cuda-a", 0, samples=cand_samples)])
    comp = compare.compare(base, cand, **kw)
    (row,) = comp.rows
    return row.verdict, comp.exit_code


def test_clear_slowdown_outside_the_noise_fails():
    assert verdict_of(BASE_SAMPLES, [1.20, 1.22, 1.19, 1.21, 1.18]) == ("slower", 1)


def test_clear_speedup_outside_the_noise_is_faster():
    assert verdict_of(BASE_SAMPLES, [0.80, 0.81, 0.79, 0.82, 0.78]) == ("faster", 0)


def test_slowdown_within_the_noise_is_within_noise_not_failed():
    # median +20 %, but the samples interleave with the baseline's: no evidence of a change
    noisy_base = [0.7, 1.0, 1.3, 0.9, 1.4]
    verdict, code = verdict_of(noisy_base, [1.2, 0.8, 1.5, 0.75, 1.35])
    assert (verdict, code) == ("within noise", 0)


def test_small_real_change_is_within_the_threshold():
    assert verdict_of(BASE_SAMPLES, [1.05, 1.06, 1.04, 1.07, 1.05]) == ("within noise", 0)
    # without a threshold: 5 % is beyond the baseline's 4 % spread and every resample
    assert verdict_of(BASE_SAMPLES, [1.05, 1.06, 1.04, 1.07, 1.05], max_slowdown=0) == \
        ("slower", 1)


def test_three_repeats_that_all_moved_are_enough():
    assert verdict_of([1.0, 1.01, 0.99], [1.3, 1.31, 1.29]) == ("slower", 1)
    # one baseline pass 20 % up: a 29 % change is within the baseline's own spread
    assert verdict_of([1.0, 1.01, 1.2], [1.3, 1.31, 1.1]) == ("within noise", 0)


def test_files_without_samples_use_min_max_ranges():
    base = document([run("10s", "cuda-a", 1.0)])
    cand = document([run("10s", "cuda-a", 1.3)])
    base["runs"][0]["timing_max_s"]["total"] = 1.4   # the baseline's range covers the candidate
    (row,) = compare.compare(base, cand).rows
    assert row.verdict == "within noise" and not row.failed
    assert "the baseline's spread" in row.note


def test_the_noise_floor_widens_the_threshold():
    """A run-to-run drift the passes of one run do not show: 30 % with tight samples fails by
    default, passes with the machine's floor of 40 %, and 1.5x fails beyond it."""
    tight = [1.0, 1.005, 0.995]
    assert verdict_of(tight, [1.3, 1.305, 1.295]) == ("slower", 1)
    assert verdict_of(tight, [1.3, 1.305, 1.295], noise_floor=40) == ("within noise", 0)
    row = compare.compare(document([run("10s", "a", 0, samples=tight)]),
                          document([run("10s", "a", 0, samples=[1.6, 1.61, 1.59])]),
                          noise_floor=40).rows[0]
    assert (row.verdict, row.failed, row.noise_floor_pct) == ("slower", True, 40)
    assert row.interval[0] > 1.5 and "noise floor 40 %" in row.note
    # the baseline's own spread is a floor too; the candidate's is not (a busy neighbour
    # widens the candidate's spread; it must not excuse its slowdown)
    wide = [0.8, 1.0, 1.3]
    assert verdict_of(wide, [1.4, 1.41, 1.39])[0] == "within noise"
    assert verdict_of(tight, [1.45, 1.2, 1.8, 1.5, 1.45])[0] == "slower"


def test_noise_verdicts_on_synthetic_runs():
    """Many synthetic pairs: same-code runs with 5 % pass noise and up to 8 % run-to-run
    drift pass with the floor, 1.5x slower runs fail."""
    import random
    rng = random.Random(3)

    def samples(scale, n=5):
        drift = 1 + rng.uniform(-0.08, 0.08)
        return [scale * drift * (1 + abs(rng.gauss(0, 0.05))) for _ in range(n)]
    same = [verdict_of(samples(1.0), samples(1.0), noise_floor=10)[1] for _ in range(50)]
    slow = [verdict_of(samples(1.0), samples(1.5), noise_floor=10)[1] for _ in range(50)]
    assert sum(same) == 0 and sum(slow) == 50


def test_other_hardware_is_a_comparison_not_a_regression(tmp_path, capsys):
    base = document([run("10s", "cuda-a", 0, samples=BASE_SAMPLES)])
    cand = document([run("10s", "cuda-a", 0, samples=[2.0, 2.01, 1.99, 2.02, 1.98])])
    cand["runs"][0]["device"] = "NVIDIA H200"
    (row,) = compare.compare(base, cand).rows
    assert row.verdict == "not comparable" and not row.failed and row.cause == "hardware"
    assert "speed ratio 0.5x" in row.note and "device cpu -> NVIDIA H200" in row.note
    # a different driver on the same device counts too; a mismatch still fails
    cand["runs"][0]["device"] = "cpu"
    cand["devices"] = [{"api": "numpy", "name": "cpu", "backends": ["cuda-a"],
                        "driver_version": "2"}]
    # a driver only the candidate recorded is unknown in the baseline: not a difference
    assert compare.compare(base, cand).rows[0].verdict == "slower"
    base["devices"] = [dict(cand["devices"][0], driver_version="1")]
    (row,) = compare.compare(base, cand).rows
    assert row.verdict == "not comparable" and "driver_version 1 -> 2" in row.note
    cand["runs"][0]["status"] = "mismatch"
    assert compare.compare(base, cand).exit_code == 1
    cand["runs"][0]["status"] = "ok"
    assert cli.main(["compare", write(tmp_path, "b.json", base), write(tmp_path, "c.json", cand)]) == 0
    out = capsys.readouterr().out
    assert "not comparable" in out and "PASS" in out


def test_cell_axes_are_part_of_the_key():
    a = run("proteome", "cuda-task", 1.0)
    a.update(workload="profile", model="Pkinase", kind="msv")
    b = dict(a, kind="vf")
    comp = compare.compare(document([a, b]), document([copy.deepcopy(a), copy.deepcopy(b)]))
    assert sorted(r.key[3] for r in comp.rows) == ["Pkinase × msv", "Pkinase × vf"]
    assert {r.verdict for r in comp.rows} == {"within noise"}


def test_ratio_interval_is_bootstrapped_and_repeatable():
    from hmmbench import stats
    lo, hi = stats.ratio_interval([1.0, 1.1, 0.9, 1.05, 0.95], [2.0, 2.2, 1.8, 2.1, 1.9])
    assert 1.6 < lo < 2.0 < hi < 2.5
    assert stats.ratio_interval([1.0, 1.1, 0.9], [2.0, 2.2, 1.8]) == \
        stats.ratio_interval([1.0, 1.1, 0.9], [2.0, 2.2, 1.8])
    assert stats.ratio_interval([], [1.0]) is None


def test_other_clocks_are_not_comparable():
    base = document([run("10s", "cuda-a", 0, samples=BASE_SAMPLES)])
    cand = document([run("10s", "cuda-a", 0, samples=[2.0, 2.01, 1.99, 2.02, 1.98])])
    base["runs"][0]["info"] = {"sm_clock_mhz_max": 1980.0, "sm_clock_mhz_min": 1970.0}
    cand["runs"][0]["info"] = {"sm_clock_mhz_max": 1410.0, "sm_clock_mhz_min": 1400.0}
    (row,) = compare.compare(base, cand).rows
    assert (row.verdict, row.failed, row.cause) == ("not comparable", False, "clocks")
    assert "1980 -> 1410 MHz" in row.note
    cand["runs"][0]["info"] = {"sm_clock_mhz_max": 1980.0, "sm_clock_mhz_min": 1200.0,
                               "throttled": True}
    (row,) = compare.compare(base, cand).rows
    assert row.verdict == "not comparable" and "candidate was throttled" in row.note
    cand["runs"][0]["info"] = {"sm_clock_mhz_max": 1960.0}      # 1 % apart: comparable
    assert compare.compare(base, cand).rows[0].verdict == "slower"


# --- rows matched by content ----------------------------------------------------------------

def with_bytes(rec, sha):
    return dict(rec, dataset_sha256=sha * 64)


def test_same_name_other_bytes_is_not_comparable_never_a_regression(tmp_path, capsys):
    base = document([with_bytes(run("mine.in", "cuda-a", 0, samples=BASE_SAMPLES), "a")])
    cand = document([with_bytes(run("mine.in", "cuda-a", 0, samples=[3.0, 3.1, 2.9]), "b")])
    (row,) = compare.compare(base, cand).rows
    assert (row.verdict, row.failed, row.cause) == ("not comparable", False, "data bytes")
    assert f"sha256 {'b' * 12} here, {'a' * 12} in the baseline" in row.note
    assert cli.main(["compare", write(tmp_path, "b.json", base),
                     write(tmp_path, "c.json", cand)]) == 0
    assert "not comparable" in capsys.readouterr().out
    # the same bytes under the same name: gated as ever
    cand["runs"][0]["dataset_sha256"] = "a" * 64
    assert compare.compare(base, cand).rows[0].verdict == "slower"
    # a mismatch still fails whatever the bytes
    cand["runs"][0].update(dataset_sha256="b" * 64, status="mismatch")
    assert compare.compare(base, cand).exit_code == 1


def test_two_same_named_sets_in_one_file_match_by_bytes():
    base = document([with_bytes(run("x.in", "cuda-a", 1.0), "a"),
                     with_bytes(run("x.in", "cuda-a", 5.0), "b")])
    cand = document([with_bytes(run("x.in", "cuda-a", 5.0), "b"),
                     with_bytes(run("x.in", "cuda-a", 1.0), "a")])
    comp = compare.compare(base, cand)
    assert [r.verdict for r in comp.rows] == ["within noise", "within noise"]
    assert [r.baseline_s for r in comp.rows] == [5.0, 1.0]


def test_the_stage_gated(tmp_path, capsys):
    """--stage kernel gates a GPU kernel's own time: a kernel 20 % slower inside an unchanged
    total fails there and passes on the total."""
    cand = copy.deepcopy(BASE)
    cand["runs"][0]["timing_s"]["kernel"] *= 1.2
    assert gate(tmp_path, cand) == 0
    assert gate(tmp_path, cand, "--stage", "kernel") == 1
    out = capsys.readouterr().out
    assert "kernel stage" in out and "slower" in out
