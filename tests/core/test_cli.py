"""The hmmbench command: run/score/report/list with fake backends; user errors -> exit 2."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hmmbench import cli, registry, results

from helpers.paths import REPO
from helpers.runner_fakes import ToyBackend, toy_dataset, toy_log10


def test_run_writes_json_and_report(fake_world, tmp_path, capsys):
    out = tmp_path / "r.json"
    code = cli.main(["run", "--dataset", "toy", "--backend", "numpy", "--backend", "good",
                     "--backend", "wrong", "--backend", "gone", "--repeat", "2",
                     "--json", str(out)])
    assert code == 0
    doc = results.load(out)
    status = {r["backend"]: r["status"] for r in doc["runs"]}
    assert status == {"numpy": "ok", "good": "ok", "wrong": "mismatch", "gone": "unavailable"}
    assert doc["command"][:2] == ["hmmbench", "run"] and "--json" in doc["command"]
    assert all(r["repeats"] == 2 for r in doc["runs"] if r["status"] != "unavailable")
    captured = capsys.readouterr()
    assert "toy" in captured.out and "mismatch" in captured.out  # the report
    assert "no toy device" in captured.out
    # Not a TTY: one plain progress line per finished run on stderr.
    assert len(re.findall(r"^\[\d/4\] toy ", captured.err, re.M)) == 4


def test_run_without_backend_runs_what_can_run_and_sums_up_the_rest(fake_world, tmp_path,
                                                                      capsys, monkeypatch):
    more = [ToyBackend(f"far-{i}", unavailable="no far device") for i in range(3)]
    monkeypatch.setattr(registry, "discover", lambda workload="pairhmm": fake_world + more)
    out = tmp_path / "r.json"
    assert cli.main(["run", "--dataset", "toy", "--repeat", "1", "--json", str(out)]) == 0
    doc = results.load(out)
    assert [r["backend"] for r in doc["runs"]] == ["numpy", "good", "wrong", "boom"]
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "unavailable" in line]
    assert lines == ["4 backends unavailable here, not run (`hmmbench list` names them): "
                     "gone: no toy device; 3 numpy backends: no far device"]
    assert "far-" not in captured.out and "gone" not in captured.out    # no row for each


def test_run_default_path_and_globs(fake_world, tmp_path, capsys):
    assert cli.main(["run", "--backend", "g*", "--repeat", "1", "-q"]) == 0
    files = list((tmp_path / "results" / "runs").glob("hmmbench-*Z.json"))
    assert len(files) == 1
    doc = results.load(files[0])
    assert [r["backend"] for r in doc["runs"]] == ["good", "gone"]   # not "boom"


def test_json_to_stdout_is_pure_json(fake_world, capsys):
    assert cli.main(["run", "--backend", "good", "--repeat", "1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["runs"][0]["backend"] == "good"
    assert "toy" in captured.err   # the report went to stderr


def test_unknown_backend_exit_2_lists_names(fake_world, tmp_path, capsys):
    code = cli.main(["run", "--backend", "nope", "--json", str(tmp_path / "x.json")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hmmbench: error: unknown backend 'nope'")
    assert "good" in err[0] and "numpy" in err[0]
    assert not (tmp_path / "x.json").exists()


def test_unknown_dataset_exit_2(fake_world, tmp_path, capsys):
    assert cli.main(["run", "--dataset", "nothere", "--json", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown dataset 'nothere'" in err[0]
    assert not (tmp_path / "x.json").exists()


def test_bad_option_values_exit_2(fake_world, capsys):
    assert cli.main(["run", "--repeat", "0"]) == 2
    assert cli.main(["run", "--chunking", "sideways", "--repeat", "1"]) == 2
    assert "sideways" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--repeat", "many"])
    assert exc.value.code == 2


def test_score_format_and_order(fake_world, tmp_path):
    out = tmp_path / "s.txt"
    assert cli.main(["score", "--dataset", "toy", "--backend", "good", "--output", str(out)]) == 0
    lines = out.read_text().splitlines()
    expected = toy_log10(toy_dataset().load())
    assert len(lines) == len(expected)
    assert all(re.fullmatch(r"-?\d+\.\d{6}", line) for line in lines)
    assert [float(x) for x in lines] == pytest.approx(expected, abs=5e-7)


def test_score_errors_leave_no_file(fake_world, tmp_path, capsys):
    out = tmp_path / "s.txt"
    assert cli.main(["score", "--dataset", "toy", "--backend", "gone", "--output", str(out)]) == 2
    assert "no toy device" in capsys.readouterr().err
    assert cli.main(["score", "--dataset", "toy", "--backend", "*", "--output", str(out)]) == 2
    assert not out.exists()
    capsys.readouterr()
    # A backend failing is no user mistake: exit 3, one line pointing at --debug ...
    assert cli.main(["score", "--dataset", "toy", "--backend", "boom", "--output", str(out)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "kernel exploded" in err[0] and "--debug" in err[0]
    # ... which shows the traceback (the exception goes up), before or after the subcommand.
    for argv in (["--debug", "score"], ["score", "--debug"]):
        with pytest.raises(RuntimeError, match="kernel exploded"):
            cli.main(argv + ["--dataset", "toy", "--backend", "boom", "--output", str(out)])
    assert list(tmp_path.glob("*s.txt*")) == [] and not list(tmp_path.glob(".s.txt*"))


def test_report_rerenders_and_bad_file(fake_world, tmp_path, capsys):
    out = tmp_path / "r.json"
    cli.main(["run", "--backend", "good", "--backend", "wrong", "--repeat", "1", "-q",
              "--json", str(out)])
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "good" in text and "wrong" in text and "mismatch" in text
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert cli.main(["report", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0]


def test_plot_needs_matplotlib_or_writes_png(fake_world, tmp_path, capsys):
    out = tmp_path / "r.json"
    cli.main(["run", "--backend", "good", "--repeat", "1", "-q", "--json", str(out)])
    png = tmp_path / "g.png"
    code = cli.main(["report", str(out), "--plot", str(png)])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 2 and "matplotlib" in capsys.readouterr().err and not png.exists()
    else:
        assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_list_shows_backends_and_reasons(fake_world, monkeypatch, capsys):
    from hmmbench.pairhmm import datasets
    monkeypatch.setattr(datasets, "catalog", lambda: [toy_dataset()], raising=False)
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "good" in out and "no toy device" in out and "toy" in out


# --- with the real dataset resolver (skips until hmmbench.pairhmm.datasets.resolve exists) -------------

def _needs_resolver():
    from hmmbench.pairhmm import datasets
    if not hasattr(datasets, "resolve"):
        pytest.skip("hmmbench.pairhmm.datasets.resolve not available yet")


def test_bad_dataset_file_exit_2_names_file_and_line(tmp_path):
    _needs_resolver()
    bad = tmp_path / "bad.in"
    bad.write_text("1 1\nACGT IIII IIII IIII III\nACGTACGT\n")
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "hmmbench", "run", "--dataset", str(bad),
                           "--backend", "numpy", "--json", str(out)], cwd=REPO,
                          capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO),
                               "HMMBENCH_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmmbench: error: ")
    assert f"{bad}:2" in lines[0]
    assert "Traceback" not in proc.stderr and not out.exists()


def test_real_list_and_datasets_list(capsys, monkeypatch):
    _needs_resolver()
    monkeypatch.setenv("HMMBENCH_DATA_PATH", "/nonexistent")
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    # The reference is always there; the shipped real sets are found, the others missing.
    assert re.search(r"│ numpy\s+│ numpy\s+│ reference", out)
    assert re.search(r"│ 1m\s+│ block .*found", out)
    assert re.search(r"│ gkl-testdata\s+│ gatk .*missing", out)
    assert cli.main(["datasets", "list"]) == 0
    assert "chunks-na12878" in capsys.readouterr().out


def test_missing_dataset_and_failed_fetch_exit_2(tmp_path, monkeypatch, capsys):
    _needs_resolver()
    from hmmbench.pairhmm import datasets
    monkeypatch.setenv("HMMBENCH_DATA_PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    out = tmp_path / "r.json"
    assert cli.main(["run", "--dataset", "gkl-testdata", "--backend", "numpy", "--json",
                     str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gkl-testdata" in err[0] and "HMMBENCH_DATA_PATH" in err[0]
    assert not out.exists()

    def offline(url, output_file, pooch_):
        raise OSError("no network")
    monkeypatch.setattr(datasets, "_downloader", lambda: offline)
    monkeypatch.setattr(datasets, "SHIPPED_DIR", tmp_path / "no-package-data")
    assert cli.main(["datasets", "fetch", "tiny"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hmmbench: error: ")


def _data_dir():
    import os
    for d in os.environ.get("HMMBENCH_DATA_PATH", "").split(os.pathsep) + [
            str(REPO.parent / "shared" / "data" / "pairhmm")]:
        if d and (Path(d) / "gkl-pairhmm-testdata.txt").is_file():
            return d
    pytest.skip("gkl-pairhmm-testdata.txt not found (set HMMBENCH_DATA_PATH)")


def test_end_to_end_with_the_numpy_backends(tmp_path):
    """python3 -m hmmbench run on a real file with the real reference backends."""
    _needs_resolver()
    import os
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HMMBENCH_DATA_PATH": _data_dir(),
           "HMMBENCH_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "hmmbench", "run", "--dataset", "gkl-testdata",
                           "--backend", "numpy*", "--repeat", "1", "--json", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = results.load(out)
    runs = {r["backend"]: r for r in doc["runs"]}
    assert set(runs) == {"numpy", "numpy-f32"}
    for r in runs.values():
        assert r["status"] == "ok" and r["n_checked"] == r["pairs"] == 104
        assert r["max_abs_err_expected"] < 1e-4     # vs the file's own expected values
    assert runs["numpy"]["max_abs_err"] == 0.0
    assert runs["numpy-f32"]["speedup_basis"] == "measured"
    assert list((tmp_path / "cache" / "reference").glob("*.npz"))
    assert "gkl-testdata" in proc.stdout


def test_unknown_opencl_device_exit_2(capsys, monkeypatch):
    pytest.importorskip("pyopencl", reason="pyopencl not installed")
    from hmmbench.pairhmm.intertask import opencl
    from hmmbench.apis import opencl as opencl_api
    if not opencl_api.usable_devices():
        pytest.skip("no usable OpenCL device (scripts/install_opencl_cpu.sh installs CPU ones)")
    monkeypatch.setenv(opencl_api.ENV_DEVICE, "")  # restored after the test: main() sets it
    assert cli.main(["list", "--opencl-device", "no-such-device-xyz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no OpenCL device matches 'no-such-device-xyz'" in err[0]


def test_unknown_workload_is_a_usage_error(capsys):
    # both workloads run and score (profile: tests/test_profile_runner.py)
    assert cli.main(["run", "--workload", "nosuch"]) == 2
    assert "unknown workload 'nosuch'" in capsys.readouterr().err
