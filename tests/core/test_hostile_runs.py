"""Long runs keep what they finish (a checkpoint after every cell, --resume runs the rest), and
one failing backend never stops the others (in a worker thread, at kernel build)."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from hmmbench import cli, registry, results
from hmmbench.errors import UnknownName
from hmmbench.pairhmm.workload import WORKLOAD as PAIRHMM

from helpers.runner_fakes import ToyBackend, launches_by_batch, toy_dataset, toy_reference


class Stopper(ToyBackend):
    """Raises ``exc`` on its first run while ``armed`` (Ctrl-C in the middle of the matrix)."""

    def __init__(self, name: str, exc: BaseException):
        super().__init__(name)
        self.exc, self.armed = exc, True

    def run(self, pairs):
        if self.armed:
            raise self.exc
        return super().run(pairs)


class Threaded(ToyBackend):
    """Runs its work in a worker thread, where it fails."""

    def run(self, pairs):
        def work():
            raise ValueError("lane 3 lost its queue")
        with ThreadPoolExecutor(max_workers=2) as pool:
            return pool.submit(work).result()


class BuildFails(ToyBackend):
    """Fails like a kernel compiler does: a message with a multi-line build log."""

    def run(self, pairs):
        raise RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on toy:\n"
                           "kernel.cl:3:1: error: unknown type name 'flaot'\n  flaot x;\n  ^\n")


@pytest.fixture
def world(monkeypatch, tmp_path):
    """Two toy datasets, backends by name (edit ``world.backends`` before a run)."""
    class World:
        backends = [toy_reference(), ToyBackend("good"),
                    Stopper("stopper", KeyboardInterrupt()), ToyBackend("later")]
    known = {"toy": toy_dataset("toy"), "toy2": toy_dataset("toy2", seed=3)}

    def resolve(names):
        for n in names:
            if n not in known:
                raise UnknownName("dataset", n, known)
        return [known[n] for n in names] or list(known.values())
    monkeypatch.setattr(registry, "discover", lambda workload="pairhmm": World.backends)
    monkeypatch.setattr(PAIRHMM, "launches", launches_by_batch)
    monkeypatch.setattr(PAIRHMM, "resolve", resolve)
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return World


RUN = ["run", "--repeat", "1", "--warmup-time", "0", "-q", "--json", "r.json"]  # calls counted


def run(argv, capsys) -> tuple:
    capsys.readouterr()
    code = cli.main(argv)
    return code, [line for line in capsys.readouterr().err.splitlines()
                  if not line.startswith("[")]


def test_interrupted_run_keeps_finished_cells_and_resume_runs_the_rest(world, tmp_path,
                                                                         capsys):
    code, err = run(RUN, capsys)
    assert code == 130 and len(err) == 1
    assert err[0] == ("hmmbench: interrupted: 2 finished cells kept in r.json, 6 not run "
                      "(add --resume r.json to run them)")
    doc = results.load(tmp_path / "r.json")         # a valid file ...
    assert doc["complete"] is False
    assert [(r["dataset"], r["backend"]) for r in doc["runs"]] == [("toy", "numpy"),
                                                                   ("toy", "good")]
    assert [(c["dataset"], c["backend"]) for c in doc["not_run"]] == [   # ... naming the rest
        ("toy", "stopper"), ("toy", "later"), ("toy2", "numpy"), ("toy2", "good"),
        ("toy2", "stopper"), ("toy2", "later")]
    first = {r["backend"]: r for r in doc["runs"]}
    assert cli.main(["report", "r.json"]) == 0
    assert "6 cells not run" in capsys.readouterr().out

    good = world.backends[1]
    calls_before = good.calls
    world.backends[2].armed = False
    code, err = run(RUN + ["--resume", "r.json"], capsys)
    assert code == 0, err
    doc = results.load(tmp_path / "r.json")
    assert doc["complete"] is True and doc["not_run"] == []
    assert [(r["dataset"], r["backend"]) for r in doc["runs"]] == [
        (d, b) for d in ("toy", "toy2") for b in ("numpy", "good", "stopper", "later")]
    assert all(r["status"] == "ok" for r in doc["runs"])
    # The kept cells were not run again: same records, and 'good' ran on toy2 only.
    again = {r["backend"]: r for r in doc["runs"] if r["dataset"] == "toy"}
    for name in ("numpy", "good"):
        assert again[name]["timing_s"] == first[name]["timing_s"]
    assert good.calls - calls_before == calls_before    # one dataset's passes (toy2), not two


def test_a_crash_keeps_finished_cells(world, tmp_path, capsys):
    """Not a backend failing (that is a record) but the run itself: the file stays valid."""
    world.backends[2] = ToyBackend("stopper")

    def broken_load():
        raise RuntimeError("disk gone")
    PAIRHMM.resolve(["toy2"])[0].loader = broken_load
    code, err = run(RUN, capsys)
    assert code == 3 and len(err) == 1 and "disk gone" in err[0] and "--debug" in err[0]
    doc = results.load(tmp_path / "r.json")
    assert [r["dataset"] for r in doc["runs"]] == ["toy"] * 4
    assert [c["dataset"] for c in doc["not_run"]] == ["toy2"] * 4


@pytest.mark.parametrize("change, says", [
    (["-d", "toy"], "which this run does not plan"),
    (["-d", "toy", "-d", "toy2", "-b", "numpy", "-b", "good"], "which this run does not plan"),
    (["--tolerance", "0.5"], "tolerance"),
    (["--chunking", "merged"], "not in its matrix"),
])
def test_resume_refuses_another_matrix(world, tmp_path, capsys, change, says):
    run(RUN, capsys)
    before = (tmp_path / "r.json").read_bytes()
    world.backends[2].armed = False
    code, err = run(RUN + ["--resume", "r.json"] + change, capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("hmmbench: error: --resume r.json")
    assert says in err[0]
    assert (tmp_path / "r.json").read_bytes() == before


def test_resume_refuses_a_same_named_dataset_of_other_bytes(world, tmp_path, capsys):
    """Cells are matched by content: 'toy' of other bytes than the file's is named as such."""
    run(RUN, capsys)
    doc = json.loads((tmp_path / "r.json").read_text())
    for cell in doc["runs"] + doc["not_run"]:
        if cell["dataset"] == "toy":
            cell["dataset_sha256"] = "f" * 64
    (tmp_path / "r.json").write_text(json.dumps(doc))
    world.backends[2].armed = False
    code, err = run(RUN + ["--resume", "r.json"], capsys)
    assert code == 2 and len(err) == 1
    assert "dataset 'toy' held other bytes (sha256 ffffffffffff" in err[0]
    assert "not comparable" in err[0]


def test_resume_refuses_other_sources_and_bad_files(world, tmp_path, capsys):
    run(RUN, capsys)
    doc = json.loads((tmp_path / "r.json").read_text())
    doc["source_sha256"] = "0" * 64
    (tmp_path / "old.json").write_text(json.dumps(doc))
    code, err = run(RUN + ["--resume", "old.json"], capsys)
    assert code == 2 and len(err) == 1 and "other hmmbench sources" in err[0]
    code, err = run(RUN + ["--resume", "missing.json"], capsys)
    assert code == 2 and len(err) == 1 and "missing.json" in err[0]


def test_checkpoint_after_every_cell(world, tmp_path, capsys, monkeypatch):
    world.backends[2] = ToyBackend("stopper")
    seen = []
    real_write = results.write

    def spy(doc, path):
        seen.append((len(doc["runs"]), len(doc["not_run"])))
        return real_write(doc, path)
    monkeypatch.setattr(results, "write", spy)
    code, _ = run(RUN, capsys)
    assert code == 0
    assert seen == [(k, 8 - k) for k in range(1, 9)] + [(8, 0)]   # 8 cells, then the final


# --- one failing backend never stops the others ----------------------------------------------
@pytest.mark.parametrize("failing, says", [
    (Threaded("threaded"), "ValueError: lane 3 lost its queue"),
    (BuildFails("broken-build"), "RuntimeError: clBuildProgram failed: BUILD_PROGRAM_FAILURE | "
                                 "kernel.cl:3:1: error: unknown type name 'flaot' (+4 lines)"),
])
def test_failing_backend_is_a_record(world, tmp_path, capsys, failing, says):
    world.backends = [toy_reference(), failing, ToyBackend("good")]
    code, _ = run(RUN + ["-d", "toy"], capsys)
    assert code == 0
    status = {r["backend"]: (r["status"], r["reason"]) for r in
              results.load(tmp_path / "r.json")["runs"]}
    assert status[failing.name] == ("error", says)
    assert status["good"][0] == status["numpy"][0] == "ok"


def test_opencl_kernel_that_does_not_build(tmp_path, monkeypatch, capsys):
    """A real OpenCL backend whose kernel source is broken: error with a one-line reason, the
    other OpenCL backend and the reference still run."""
    from hmmbench.apis import opencl as glue
    from hmmbench.registry import discover, probe
    usable = [b for b in discover("pairhmm") if b.name in ("opencl-warp", "opencl-inter-tile4")
              and probe(b).available]
    if len(usable) < 2 or "Portable Computing Language" in usable[0].device_name():
        pytest.skip("no usable OpenCL device")
    real_source = glue.kernel_source
    monkeypatch.setattr(glue, "kernel_source", lambda name: "__kernel void broken( { flaot"
                        if name == "pairhmm/broken.cl" else real_source(name))
    broken = [b for b in usable if b.name == "opencl-inter-tile4"][0]
    # on the class: the command line discovers its own backend objects
    monkeypatch.setattr(type(broken), "source", "pairhmm/broken.cl")
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    assert cli.main(["run", "-d", "ren16-t1.1@16", "-b", "numpy", "-b", "opencl-warp", "-b",
                     "opencl-inter-tile4", "--repeat", "1", "-q", "--json", str(out)]) == 0
    runs = {r["backend"]: r for r in results.load(out)["runs"]}
    assert runs["opencl-inter-tile4"]["status"] == "error"
    assert "\n" not in runs["opencl-inter-tile4"]["reason"]
    assert runs["numpy"]["status"] == runs["opencl-warp"]["status"] == "ok"


def test_ctrl_c_stops_a_suite(monkeypatch, tmp_path):
    """A step ended by Ctrl-C (its status 130) stops the suite; the steps after it do not run."""
    from hmmbench import suites
    from hmmbench.cli import suite_cmd
    calls = []
    suite = suites.get("smoke")
    plan = [(suite, step, tmp_path) for step in suite.steps]
    with pytest.raises(KeyboardInterrupt, match="suite stopped in step"):
        suite_cmd._run_steps(plan, lambda argv: calls.append(argv) or 130)
    assert len(plan) > 1 and len(calls) == 1
