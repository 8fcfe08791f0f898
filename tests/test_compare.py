"""Compare gate: exit codes on crafted result files."""
from __future__ import annotations

import copy
import json

import pytest

from hmmbench import cli, compare


def run(dataset, backend, total, status="ok", chunking="original"):
    return {"dataset": dataset, "dataset_sha256": "0" * 64, "pairs": 10, "cells": 1000,
            "backend": backend, "api": "numpy", "family": "toy", "device": "cpu", "params": {},
            "chunking": chunking,
            "timing_s": {"prep": 0.0, "h2d": 0.0, "kernel": total / 2, "d2h": 0.0, "total": total},
            "timing_min_s": {"total": total}, "timing_max_s": {"total": total},
            "gcups_kernel": 1.0, "gcups_total": 1.0, "speedup_vs_reference": None, "repeats": 3,
            "max_abs_err": 0.0, "n_checked": 10, "n_over_tol": 0, "n_fallback": 0,
            "status": status, "reason": "" if status == "ok" else "something", "info": {}}


def document(runs):
    return {"hmmbench_version": "0.1.0", "created": "2026-01-01T00:00:00+00:00",
            "command": ["hmmbench", "run"], "host": {}, "devices": [], "chunking": "original",
            "runs": runs}


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
    cand["runs"][0]["timing_s"]["total"] = 1.2   # +20 %
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
