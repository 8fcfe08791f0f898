"""Parameter axes: backend families, their aliases (today's names), sweeps from the command line,
params in every row, and the pivot on an axis."""
from __future__ import annotations

import pytest

from hmmbench import cli, registry, report, results
from hmmbench.backend import Backend, Execution
from hmmbench.errors import UserError


class Knob(Backend):
    api, family = "numpy", "toy"

    def __init__(self, name, size, fast):
        super().__init__(size=size)
        self.name = name

    def run(self, pairs):  # pragma: no cover - never run here
        return Execution(None, {})


def knob_family(presets=({"size": 2, "fast": False},)):
    return registry.BackendFamily(
        "knob", {"size": (1, 2, 4), "fast": (False, True)}, {"size": 2, "fast": False},
        Knob, alias=lambda p: None if p["fast"] else f"knob-s{p['size']}", presets=presets)


@pytest.fixture
def knobs(monkeypatch):
    fam = knob_family()
    monkeypatch.setattr(registry, "_specs", lambda workload: ["k"])
    monkeypatch.setattr(registry, "_load",
                        lambda spec: lambda: fam.preset_backends() + [Knob("other", 0, False)])
    monkeypatch.setattr(registry, "_load_families", lambda spec: [fam])
    return fam


def test_presets_are_listed_under_their_alias(knobs):
    assert [b.name for b in registry.discover()] == ["knob-s2", "other"]
    assert list(registry.families()) == ["knob"]
    b = registry.select(["knob-s4"])[0]            # an alias not among the presets
    assert b.name == "knob-s4" and b.params == {"size": 4, "fast": False}
    assert registry.select(["knob"])[0].name == "knob-s2"                  # the defaults
    assert registry.select(["knob[size=1,fast=1]"])[0].params["fast"] is True


def test_sweep_is_the_cartesian_product_and_leaves_others_alone(knobs):
    chosen = registry.select(["knob", "other"], axes={"size": ["1", "4"], "fast": ["0", "1"]})
    assert [b.name for b in chosen] == ["knob-s1", "knob[size=1,fast=1]", "knob-s4",
                                        "knob[size=4,fast=1]", "other"]
    assert [(b.params["size"], b.params["fast"]) for b in chosen[:4]] == [
        (1, False), (1, True), (4, False), (4, True)]
    # a sweep starts from an alias's own parameters
    assert [b.name for b in registry.select(["knob-s4"], axes={"fast": ["true"]})] == [
        "knob[size=4,fast=1]"]


@pytest.mark.parametrize("axes, message", [
    ({"size": ["3"]}, "not a value of 'knob' (allowed: 1, 2, 4)"),
    ({"colour": ["red"]}, "--axis colour: no selected backend has this axis"),
])
def test_bad_axis_values_are_user_errors(knobs, axes, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        registry.select(["knob"], axes=axes)


def test_todays_variant_names_still_resolve():
    names = {b.name for b in registry.discover("pairhmm")}
    for n in ("cuda-inter-tile8", "cuda-inter-naive-sorted", "cuda-subwarp-p8k16",
              "opencl-inter-tile4", "opencl-inter-tile8-sorted"):
        assert n in names
    fams = registry.families("pairhmm")
    assert {"cuda-inter", "opencl-inter", "cuda-subwarp-fixed"} <= set(fams)
    b = registry.select(["cuda-inter-tile6-sorted"])[0]
    assert b.params["tile"] == 6 and b.params["sorted"] is True and b.tile == 6
    sw = registry.select(["cuda-subwarp-p4k8"])[0]
    assert sw.params["p"] == 4 and sw.params["k"] == 8 and sw.params["long_config"] == (4, 8)
    assert [v.name for v in registry.select(["cuda-inter"], axes={"block": ["64", "128"]})] == [
        "cuda-inter[tile=8,sorted=0,block=64]", "cuda-inter-tile8"]


def test_run_sweeps_an_axis_on_the_opencl_cpu_device(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pyopencl", reason="pyopencl not installed")
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HMMBENCH_OPENCL_DEVICE", "Intel")
    probe = registry.select(["opencl-inter-tile2"])[0]
    if probe.unavailable_reason():
        pytest.skip(f"no Intel OpenCL CPU device: {probe.unavailable_reason()}")
    out = tmp_path / "axes.json"
    code = cli.main(["run", "-d", "ren18-t1.1", "-b", "numpy", "-b", "opencl-inter",
                     "--axis", "tile=2,4", "--axis", "sorted=0,1", "--opencl-device", "Intel",
                     "--repeat", "2", "--json", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    runs = {r["backend"]: r for r in results.load(out)["runs"]}
    assert set(runs) == {"numpy", "opencl-inter-tile2", "opencl-inter-tile2-sorted",
                         "opencl-inter-tile4", "opencl-inter-tile4-sorted"}
    for name, r in runs.items():
        assert r["status"] == "ok", r["reason"]
        assert len(r["samples_s"]["total"]) == 2
        if name != "numpy":
            assert r["params"]["tile"] == (2 if "tile2" in name else 4)
            assert r["params"]["sorted"] == name.endswith("-sorted")
    rows, cols, cells = report.pivot(list(runs.values()), "gcups_kernel", by="tile")
    assert cols == ["tile=2", "tile=4"] and len(rows) == 2      # numpy has no tile: left out
    assert all(c not in ("", "error") for c in cells.values())
    assert cli.main(["report", str(out), "--pivot", "gcups_kernel", "--by", "tile",
                     "--format", "markdown"]) == 0
    assert "| dataset | backend | tile=2 | tile=4 |" in capsys.readouterr().out


def test_pivot_on_a_missing_axis_is_a_user_error():
    run = dict(results.jsonable({"dataset": "d", "backend": "b", "params": {"tile": 2},
                                 "status": "ok", "gcups_kernel": 1.0}))
    with pytest.raises(UserError, match="no run has the axis 'block'.*tile"):
        report.pivot([run], "gcups_kernel", by="block")


def test_axis_option_syntax_errors_exit_2(capsys):
    assert cli.main(["run", "-b", "numpy", "--axis", "tile"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected NAME=VALUE" in err[0]


def test_pivot_by_a_record_field_keeps_backend_names():
    def run(backend, kind, g):
        return {"dataset": "db", "chunking": "whole", "backend": backend, "api": "cuda",
                "family": "warp-group", "params": {"lanes": 32}, "model": "m", "kind": kind,
                "model_length": 100, "status": "ok", "gcups_kernel": g}
    runs = [run("p-a", "ssv", 1.0), run("p-a", "msv", 2.0), run("p-b", "ssv", 3.0)]
    rows, cols, cells = report.pivot(runs, "gcups_kernel", by="kind")
    assert cols == ["kind=msv", "kind=ssv"]
    assert rows == [("db", "whole", "m", 100, "p-a"), ("db", "whole", "m", 100, "p-b")]
    assert cells[rows[0], "kind=msv"] == "2" and (rows[1], "kind=msv") not in cells


def test_list_shows_the_families_and_their_axes(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "backend families" in out and "cuda-subwarp-fixed" in out
    assert "tile=1,2,4,6,8 (default 8)" in out
