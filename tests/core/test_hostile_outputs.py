"""No output ever overwrites an input: every writer of every command refuses, before any work,
an output path that is (by the same name, another spelling, a symlink or a hard link) one of the
command's inputs; and a second run writing the same --json while one is at it fails at once."""
from __future__ import annotations

import os

import pytest

from hmmbench import cli
from hmmbench.fileio import output_lock
from helpers.hostile_world import (FASTA, GOOD_BLOCK, GOOD_GATK, PROFILE_RUN, RUN, hmm_text, put, refused,
                           world)  # noqa: F401 - world is a fixture

#: How the output path reaches the input file.
ALIASES = ("same", "dotted", "absolute", "symlink", "hardlink", "symlink-chain")


def alias(world, target: str, how: str) -> str:
    """A path that names the file ``target`` (a name in ``world``) as ``how`` says."""
    if how == "same":
        return target
    if how == "dotted":
        return f"./{target}"
    if how == "absolute":
        return str(world / target)
    link = f"{how}-to-{target}"
    if how == "symlink":
        os.symlink(target, world / link)
    elif how == "hardlink":
        os.link(world / target, world / link)
    else:
        os.symlink(target, world / f"first-{link}")
        os.symlink(f"first-{link}", world / link)
    return link


@pytest.mark.parametrize("how", ALIASES)
@pytest.mark.parametrize("fmt", ["block", "gatk"])
def test_run_json_is_the_dataset(world, capsys, how, fmt):
    put(world, "data.in", GOOD_BLOCK if fmt == "block" else GOOD_GATK)
    out = alias(world, "data.in", how)
    refused(world, capsys, RUN + ["-d", "./data.in", "--json", out], "--json", "input")


@pytest.mark.parametrize("how", ALIASES)
def test_score_output_is_the_dataset(world, capsys, how):
    put(world, "data.in", GOOD_BLOCK)
    out = alias(world, "data.in", how)
    refused(world, capsys, ["score", "-b", "numpy", "-d", "./data.in", "-o", out],
            "--output", "input")


@pytest.mark.parametrize("command", ["run", "score"])
def test_real_set_found_by_name_is_an_input(world, capsys, monkeypatch, command):
    """``-d tiny`` finds tiny.in in HMMBENCH_DATA_PATH: an output there is refused too."""
    data = world / "data"
    data.mkdir()
    (data / "tiny.in").write_text(GOOD_BLOCK)
    monkeypatch.setenv("HMMBENCH_DATA_PATH", str(data))
    argv = (RUN + ["-d", "tiny", "--json", "data/tiny.in"] if command == "run" else
            ["score", "-b", "numpy", "-d", "tiny", "-o", "data/tiny.in"])
    refused(world, capsys, argv, "tiny.in", "input")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("which", ["database", "model"])
def test_profile_outputs_are_not_inputs(world, capsys, how, which):
    pytest.importorskip("pyhmmer")
    put(world, "db.faa", FASTA)
    put(world, "m.hmm", hmm_text())
    out = alias(world, "db.faa" if which == "database" else "m.hmm", how)
    refused(world, capsys, PROFILE_RUN + ["-d", "db.faa", "--model", "m.hmm", "--json", out],
            "--json", "input")
    refused(world, capsys, ["score", "--workload", "profile", "-b", "profile-numpy", "--kind",
                            "ssv", "-d", "db.faa", "--model", "m.hmm", "-o", out],
            "--output", "input")


@pytest.mark.parametrize("how", ALIASES)
@pytest.mark.parametrize("option", ["--html", "--plot"])
def test_report_outputs_are_not_its_result_files(world, capsys, how, option):
    out = alias(world, "earlier.json", how)
    refused(world, capsys, ["report", "earlier.json", option, out], option, "input")


def test_report_plot_beside_files_are_not_inputs(world, capsys):
    """``--plot chart.png`` also writes chart-peak.png, chart-stages.png...: none may be an
    input either."""
    os.link(world / "earlier.json", world / "chart-peak.png")
    refused(world, capsys, ["report", "chart-peak.png", "--plot", "chart.png"], "--plot",
            "chart-peak.png", "input")


def test_report_html_and_plot_one_file(world, capsys):
    refused(world, capsys, ["report", "earlier.json", "--html", "page.png", "--plot",
                            "page.png"], "--html", "--plot")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_history_plot_is_not_a_result_file(world, capsys, how):
    os.link(world / "earlier.json", world / "again.json")
    out = alias(world, "earlier.json", how)
    refused(world, capsys, ["history", "earlier.json", "again.json", "--plot", out],
            "--plot", "input")
    # a result file found inside a directory is an input as well
    refused(world, capsys, ["history", ".", "--plot", out], "--plot", "input")


def test_resume_writes_its_own_file_but_not_a_dataset(world, capsys):
    put(world, "data.in", GOOD_BLOCK)
    refused(world, capsys, RUN + ["-d", "./data.in", "--resume", "earlier.json", "--json",
                                  "data.in"], "--json", "input")


def test_a_second_run_on_one_json_fails_at_once(world, capsys):
    """While one run holds the file (a lock in the user cache), another one writing the same
    file -- by any name -- is refused before it runs anything; afterwards it runs."""
    put(world, "data.in", GOOD_BLOCK)
    os.symlink("out.json", world / "alias.json")
    with output_lock(world / "out.json", "--json"):
        refused(world, capsys, RUN + ["-d", "./data.in", "--json", "out.json"],
                "another hmmbench run")
        refused(world, capsys, RUN + ["-d", "./data.in", "--json", "alias.json"],
                "another hmmbench run")
    assert cli.main(RUN + ["-d", "./data.in", "--json", "out.json"]) == 0
    assert (world / "out.json").is_file()
    assert not list(world.glob("*.lock")) and not list(world.glob(".*.lock"))   # no debris


def test_two_processes_one_json(world, tmp_path):
    """Two real processes started together on one --json: one writes it, the other fails with
    one line and exit 2 -- or waits its turn and writes after it; never two 'results:' lines
    with one result set lost silently."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    argv = [sys.executable, "-m", "hmmbench", "run", "-b", "numpy", "-q", "-d", "equal-32@1000",
            "--repeat", "2", "--json", "out.json"]
    procs = [subprocess.Popen(argv, cwd=world, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    errs = [e for _, e in outs]
    if codes == [0, 2]:
        loser = errs[[p.returncode for p in procs].index(2)]
        assert "another hmmbench run is writing this file" in loser
    else:                                       # they did not overlap: both wrote, in turn
        assert codes == [0, 0], errs
    assert (world / "out.json").is_file()
