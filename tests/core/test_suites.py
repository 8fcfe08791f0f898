"""Named suites: every step of every suite is a valid ``hmmbench run`` (options parse, datasets
resolve, backend patterns name registered backends), and the smoke suite runs end to end."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.paths import REPO
from hmmbench import cli, registry, results, suites, workload
from hmmbench.errors import UserError
from hmmbench.options import run_options


def every_step():
    return [(s.name, step) for s in suites.every() for step in s.steps]


@pytest.mark.parametrize("suite,step", every_step(), ids=lambda x: getattr(x, "name", x))
def test_every_step_parses_and_resolves(suite, step, tmp_path):
    args = cli.build_parser().parse_args(step.argv(tmp_path))
    if step.compare:       # compares two earlier steps' files (checked when the suite loads)
        assert args.command == "compare" and not step.writes
        assert [args.baseline, args.candidate] == [str(tmp_path / f"{n}.json")
                                                   for n in step.compare]
        return
    assert args.command == "run" and args.json == str(tmp_path / f"{step.name}.json")
    w = workload.get(args.workload)
    every = {b.name for b in registry.discover(w.name)}
    for pattern in step.backends:   # each pattern selects at least one registered backend
        assert registry.select([pattern], w.name), pattern
    backends = registry.select(step.backends, w.name)
    family_members = {p for p in step.backends if "[" in p}   # named with their axes' values
    assert {b.name for b in backends} <= every | family_members
    try:
        datasets, _ = w.plan(run_options(vars(args), w), backends)
    except UserError as exc:   # a real set that is not on this machine: the name is still known
        if "not found" not in str(exc):
            raise
        pytest.skip(f"real data not here: {exc}")
    assert len(datasets) >= len(step.datasets)
    for mode in args.chunking:
        w.check_chunking(mode)


def test_a_generated_model_set_is_planned_without_generating_it(tmp_path, monkeypatch):
    """profile-many's plan knows models-mixed100's 100 models (names, sizes) from the set's
    parameters and generates nothing; a set's models so known are the ones its file holds once
    generated (names, sizes, descriptions, identities), and a cell's identity is its model's."""
    pytest.importorskip("pyhmmer")
    from hmmbench.profile import datasets as pds
    from hmmbench.profile.datasets.modelsets import DESCRIPTION, mixed_lengths
    cache = tmp_path / "cache"
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(cache))
    step = steps_by_name()["profile-many"]
    args = cli.build_parser().parse_args(step.argv(tmp_path))
    w = workload.get(args.workload)
    cells, _ = w.plan(run_options(vars(args), w), registry.select(step.backends, w.name))
    assert [c.axes["model_length"] for c in cells] == list(mixed_lengths(100, 1))
    assert [c.axes["model"] for c in cells[:2]] == ["models-mixed100/mixed001-M50",
                                                    "models-mixed100/mixed002-M2000"]
    small = pds.resolve_models("models-mixed2:5")
    assert not list(cache.rglob("*.hmm"))                        # nothing generated
    generated = pds.file_models(str(pds.model_set_file("models-mixed2:5")), DESCRIPTION)
    fields = [(s.name, s.M, s.description, s.aliases, s.keep, s.sha256) for s in generated]
    assert [(s.name, s.M, s.description, s.aliases, s.keep, s.sha256) for s in small] == fields
    assert [s.name for s in small] == ["models-mixed2:5/mixed1-M50", "models-mixed2:5/mixed2-M2000"]
    assert small[1].load()[0].M == 2000
    db = pds.resolve_database("proteins-2e8")
    cell = w.plan(run_options({**vars(args), "model": ["models-mixed2:5"]}, w),
                  registry.select(step.backends, w.name))[0][1]
    assert cell.sha256 == pds.sha256_of_params({"database": db.sha256,
                                                "model": generated[1].sha256, "kind": "pipeline"})


def test_the_studies_are_suites():
    names = suites.names()
    assert {"tiles", "table3", "smallcount", "chunking", "apis", "peak", "e2e", "profile-curve",
            "profile-proteome", "profile-task", "profile"} <= set(names)
    profile = suites.get("profile")
    assert [s.name for s in profile.steps] == ["profile-curve-a", "profile-curve-b",
                                               "profile-curve-c", "profile-proteome",
                                               "profile-peers", "profile-task"]


def test_a_step_name_is_one_run():
    """A step's name is its result file's name (results/<gpu>/<step>.json): two steps of one name,
    in two suites, must be the same run."""
    seen = {}
    for s in suites.every():
        for step in s.steps:
            argv = command_options(step.argv("out"))
            assert seen.setdefault(step.name, argv) == argv, f"{s.name}/{step.name}"


def test_dry_run_prints_the_commands(tmp_path, capsys):
    assert cli.main(["suite", "run", "e2e", "--dry-run", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"hmmbench run -d 10s -d 1m -b cuda-subwarp -b cuda-subwarp-nostreams --chunking merged "
        f"--max-time 3 --json {tmp_path}/e2e.json",
        f"hmmbench run -d chunks-na12878 -b cuda-subwarp --chunking merged --repeat 1 "
        f"--json {tmp_path}/e2e-na12878.json"]
    assert not any(tmp_path.iterdir())    # nothing written


def test_the_gpu_gate_suite_slows_the_same_backend_and_expects_the_gate_to_fail(tmp_path,
                                                                                capsys):
    """gate-gpu: three runs of cuda-subwarp alike but for the extra-work variable of the third,
    then the kernel stage gated: the second run against the first must pass, the third fail."""
    from hmmbench.pairhmm.subwarp.extra_work import ENV
    steps = {s.name: s for s in suites.get("gate-gpu").steps}
    runs = [steps[n] for n in ("gate-gpu-base", "gate-gpu-base2", "gate-gpu-slow")]
    assert len({(s.datasets, s.backends, tuple(s.options.items())) for s in runs}) == 1
    assert runs[0].backends == ("cuda-subwarp",) and runs[2].env == {ENV: "10"}
    assert (steps["gate-gpu-same"].expect, steps["gate-gpu-caught"].expect) == (0, 1)
    assert cli.main(["suite", "run", "gate-gpu", "--dry-run", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith(f"{ENV}=10 hmmbench run ")
    assert lines[4] == (f"hmmbench compare {tmp_path}/gate-gpu-base.json "
                        f"{tmp_path}/gate-gpu-slow.json --stage kernel --max-slowdown 5")


def test_a_step_environment_and_expected_exit(tmp_path, monkeypatch, capsys):
    """A step's env is set for it alone; a step ending with its expected exit status (a
    compare that must fail) is no failure, one ending otherwise is."""
    import os
    from hmmbench.cli import suite_cmd
    from hmmbench.suites import Step
    seen = []

    def fake_main(argv):
        seen.append((argv[0], os.environ.get("HMMBENCH_TEST_STEP")))
        return 1 if argv[0] == "compare" else 0
    suite = suites.Suite("t", "", ())
    plan = [(suite, Step("a", datasets=("tiny",), env={"HMMBENCH_TEST_STEP": "x"}), tmp_path),
            (suite, Step("b", datasets=("tiny",)), tmp_path),
            (suite, Step("c", compare=("a", "b"), expect=1), tmp_path)]
    assert suite_cmd._run_steps(plan, fake_main) == 0
    assert seen == [("run", "x"), ("run", None), ("compare", None)]
    plan[2] = (suite, Step("c", compare=("a", "b")), tmp_path)     # expected to pass
    assert suite_cmd._run_steps(plan, fake_main) == 1
    assert "steps failed: c (exit 1)" in capsys.readouterr().err


def test_a_compare_step_needs_two_earlier_steps(monkeypatch):
    from hmmbench.suites import catalog
    bad = {"about": "x", "steps": [{"name": "a", "datasets": ["tiny"]},
                                   {"name": "c", "compare": ["a", "later"]},
                                   {"name": "later", "datasets": ["tiny"]}]}
    monkeypatch.setitem(catalog.SUITES, "bad", bad)
    with pytest.raises(ValueError, match="step 'c'"):
        suites.get("bad")


def test_unknown_suite_and_bad_out_exit_2(tmp_path, capsys):
    assert cli.main(["suite", "run", "nope"]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err
    afile = tmp_path / "f"
    afile.write_text("")
    assert cli.main(["suite", "run", "smoke", "--out", str(afile)]) == 2
    assert "--out is not a directory" in capsys.readouterr().err


def test_a_bad_step_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    from hmmbench.suites import catalog
    bad = {"about": "x", "steps": [{"name": "a", "datasets": ["tiny"], "backends": ["numpy"]},
                                   {"name": "b", "options": {"no-such-option": 1}}]}
    monkeypatch.setitem(catalog.SUITES, "bad", bad)
    assert cli.main(["suite", "run", "bad", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hmmbench: error: suite 'bad' step 'b':") and "no-such-option" in err
    assert not list(tmp_path.iterdir())


def test_smoke_suite_runs_end_to_end(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pyhmmer")
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["suite", "run", "smoke"]) == 0     # default out: results/runs/smoke/
    out = tmp_path / "results" / "runs" / "smoke"
    assert sorted(p.name for p in out.iterdir()) == ["smoke-pairhmm.json", "smoke-profile.json"]
    pair = results.load(out / "smoke-pairhmm.json")
    assert pair["command"] == ["hmmbench"] + suites.get("smoke").steps[0].argv(
        Path("results/runs/smoke"))
    assert {r["backend"]: r["status"] for r in pair["runs"]} == {"numpy": "ok",
                                                                 "numpy-f32": "ok"}
    prof = results.load(out / "smoke-profile.json")
    assert {(r["backend"], r["kind"]) for r in prof["runs"] if r["status"] == "ok"} == {
        (b, k) for b in ("profile-numpy", "profile-pyhmmer") for k in ("ssv", "msv")}
    assert "=== [2/2] smoke/smoke-profile" in capsys.readouterr().err


def command_options(argv: list) -> list:
    """An hmmbench run command line as a sorted list of (option, value) pairs."""
    short = {"--dataset": "-d", "--backend": "-b"}
    out, i = [], 0
    while i < len(argv):
        token = argv[i]
        if token in ("hmmbench", "-q", "--quiet"):
            i += 1
        elif token == "--json":
            i += 2
        elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out.append((short.get(token, token), argv[i + 1]))
            i += 2
        else:
            out.append((token,))
            i += 1
    return sorted(out)


RESULTS = REPO / "results"


def committed_files() -> list:
    """results/<gpu>/<step>.json, the curated result files (runs/ is never committed)."""
    return sorted(p for p in RESULTS.glob("*/*.json") if p.parent.name != "runs")


def steps_by_name() -> dict:
    return {step.name: step for s in suites.every() for step in s.steps}


def test_results_hold_files_of_suite_steps():
    assert len(committed_files()) >= 10


@pytest.mark.parametrize("path", committed_files(),
                         ids=lambda p: p.relative_to(RESULTS).as_posix())
def test_every_result_file_is_the_run_of_its_step(path):
    """results/<gpu>/<step>.json is what that suite step runs: its recorded command line is the
    step's (up to option order, the --json path and -q), so `hmmbench suite run` redoes it."""
    step = steps_by_name().get(path.stem)
    assert step is not None, f"{path.name}: no suite step of that name"
    recorded = results.load(path)["command"]
    assert command_options(step.argv("out")) == command_options(recorded)


def test_steps_run_in_order_and_do_not_leak_settings(tmp_path, monkeypatch, capsys):
    """Each step is one cli.main call; what a step sets in the environment (--opencl-device
    does) is gone before the next; a failing or crashing step does not stop the others."""
    import os
    seen = []

    def fake_main(argv):
        seen.append((argv[argv.index("--json") + 1], os.environ.get("HMMBENCH_TEST_LEAK")))
        os.environ["HMMBENCH_TEST_LEAK"] = "set by a step"
        if len(seen) == 1:
            raise RuntimeError("step crashed")
        return 0
    monkeypatch.delenv("HMMBENCH_TEST_LEAK", raising=False)
    from hmmbench.cli import suite_cmd
    suite = suites.get("smoke")
    code = suite_cmd._run_steps([(suite, step, tmp_path) for step in suite.steps], fake_main)
    assert code == 1
    assert seen == [(str(tmp_path / "smoke-pairhmm.json"), None),
                    (str(tmp_path / "smoke-profile.json"), None)]
    assert "HMMBENCH_TEST_LEAK" not in os.environ
    err = capsys.readouterr().err
    assert "RuntimeError: step crashed" in err and "steps failed: smoke-pairhmm (exit 1)" in err
