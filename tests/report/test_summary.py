"""hmmbench report --summary: results/SUMMARY.md is generated from the committed result files
(and stays so), the twin ratio table, and the usage errors."""
from __future__ import annotations

import json

import pytest

from helpers.paths import REPO
from hmmbench import cli, summary
from hmmbench.report.markdown_printer import ratio_markdown

RESULTS = REPO / "results"


def test_committed_summary_is_the_generated_one():
    want = (RESULTS / "SUMMARY.md").read_text()
    got = summary.summary_markdown(RESULTS)
    assert got == want, ("results/SUMMARY.md differs from the result files: regenerate it with "
                         "`hmmbench report --summary results/ > results/SUMMARY.md`")


def test_summary_holds_the_figures_of_the_hand_written_tables():
    text = (RESULTS / "SUMMARY.md").read_text()
    # h200/tiles.json, kernel GCUPS (results/README.md's tile sweep, before it was generated)
    assert "| ren18-t1.1@1e6 | 367.9 | 704.9 | 1135 | 1218 | 1226 |" in text
    # h100/profile-curve-a.json: one table per backend, the kinds as columns
    assert "| proteins-2e8 | random-M100 | 100 | 5938 | 5277 | 314 |" in text
    # h200/apis-*.json: OpenCL / CUDA kernel time of the intra-naive twins
    assert "| intra-naive | 0.76 | 0.67 |" in text
    assert "- devices: NVIDIA H200" in text and "- devices: NVIDIA H100 80GB HBM3" in text


def run(backend, api, kernel, dataset="10s", chunking="merged", fallback=0.0, status="ok"):
    return {"backend": backend, "api": api, "dataset": dataset, "chunking": chunking,
            "status": status, "timing_s": {"kernel": kernel},
            "info": {"fallback_seconds": {"kernel": fallback}}}


def test_api_ratios_pair_twins_by_family():
    runs = [run("cuda-warp", "cuda", 2.0, fallback=0.5), run("opencl-warp", "opencl", 3.0),
            run("cuda-warp", "cuda", 1.0, dataset="1m"), run("opencl-warp", "opencl", 4.0,
                                                               dataset="1m", status="mismatch"),
            run("cuda-solo", "cuda", 1.0), run("profile-cuda-task", "cuda", 1.0),
            run("profile-opencl-task", "opencl", 0.5)]
    table, cells, apis = summary.api_ratios(runs)
    assert apis == ("opencl", "cuda") and cells == ["10s merged"]
    assert table == {"profile-task": {"10s merged": 0.5}, "warp": {"10s merged": 1.5}}
    table, _, _ = summary.api_ratios(runs, float32_pass=True)
    assert table["warp"]["10s merged"] == pytest.approx(2.0)
    assert summary.api_ratios(runs[:1]) == ({}, [], ("", ""))
    assert ratio_markdown(table, ["10s merged"]).splitlines()[2] == \
        "| profile-task | 0.50 |"


def test_local_runs_are_left_out(tmp_path):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "runs").mkdir()
    for where in ("gpu/a.json", "runs/hmmbench-1.json"):
        (tmp_path / where).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in summary.result_files(tmp_path)] == \
        ["gpu/a.json"]


def test_summary_usage_errors_exit_2(tmp_path, capsys):
    assert cli.main(["report", "--summary", str(tmp_path / "none")]) == 2
    assert "needs a results folder" in capsys.readouterr().err
    assert cli.main(["report", "--summary", str(tmp_path)]) == 2
    assert "no result files" in capsys.readouterr().err
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "bad.json").write_text(json.dumps({"runs": []}))
    assert cli.main(["report", "--summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hmmbench: error: ") and "bad.json" in err
    assert cli.main(["report"]) == 2
    assert "needs result files" in capsys.readouterr().err
