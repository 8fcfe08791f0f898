"""Result files: schema round trip, non-finite floats, validation errors, atomic writes."""
from __future__ import annotations

import json
import math
import os

import pytest

from hmmbench import results
from hmmbench.errors import UserError
from hmmbench.runner import ReferenceStore, RunConfig, run_benchmark

from helpers.runner_fakes import ToyBackend, launches_by_batch, toy_dataset, toy_reference


@pytest.fixture
def doc(tmp_path):
    cfg = RunConfig(repeat=1, cache_dir=tmp_path / "cache")
    bench = run_benchmark([toy_dataset()], [ToyBackend("good"), ToyBackend("nan", nan=True),
                                            ToyBackend("gone", unavailable="no device")],
                          cfg, launches_fn=launches_by_batch,
                          refs=ReferenceStore(toy_reference(), None, cfg))
    return results.make_document(bench, ["hmmbench", "run"])


def test_round_trip(doc, tmp_path):
    path = results.write(doc, tmp_path / "out" / "r.json")
    text = path.read_text()

    def no_bare_constants(name):
        raise AssertionError(f"bare {name} in strict JSON")
    json.loads(text, parse_constant=no_bare_constants)
    back = results.load(path)
    assert back["command"] == ["hmmbench", "run"]
    assert set(back["host"]["packages"]) >= {"numpy", "rich", "pycuda", "pyopencl"}
    assert back["host"]["packages"]["numpy"]
    runs = {r["backend"]: r for r in back["runs"]}
    assert runs["good"]["status"] == "ok" and runs["good"]["timing_s"]["total"] > 0
    assert set(runs["good"]["timing_s"]) == {"prep", "h2d", "kernel", "d2h", "total"}
    assert math.isinf(runs["nan"]["max_abs_err"])           # restored from "Infinity"
    assert runs["gone"]["status"] == "unavailable" and runs["gone"]["reason"] == "no device"
    assert back["devices"][0]["name"] == "Toy CPU"
    assert back["created"].endswith("+00:00")
    for k in results.RUN_FIELDS:
        assert k in runs["good"]
    # every timed pass is kept, per stage; the median of the samples is the stored figure
    good = runs["good"]
    assert len(good["samples_s"]["total"]) == good["repeats"]
    assert sorted(good["samples_s"]["kernel"])[len(good["samples_s"]["kernel"]) // 2] == \
        pytest.approx(good["timing_s"]["kernel"])
    assert back["schema"] == 2 and "source_commit" in back


def test_files_without_samples_still_load(doc, tmp_path):
    for r in doc["runs"]:
        r.pop("samples_s", None)
    doc["schema"] = 1
    path = tmp_path / "old.json"
    path.write_text(json.dumps(results.jsonable(doc)))
    assert all("samples_s" not in r for r in results.load(path)["runs"])


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("runs"), "missing 'runs'"),
    (lambda d: d["runs"][0].pop("status"), "lacks 'status'"),
    (lambda d: d["runs"][0].__setitem__("status", "great"), "status 'great'"),
    (lambda d: d["runs"][0].__setitem__("repeats", "three"), "repeats has the wrong type"),
    (lambda d: d["runs"][0]["timing_s"].__setitem__("total", "x"), "timing_s.total"),
    (lambda d: d["runs"][0]["samples_s"].__setitem__("total", [1.0, "x"]), "samples_s.total"),
    (lambda d: d["runs"][0].__setitem__("samples_s", [1.0]), "samples_s is not an object"),
])
def test_schema_errors_name_the_file(doc, tmp_path, mutate, message):
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError) as err:
        results.load(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_invalid_json_and_missing_file(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"runs": [\n')
    with pytest.raises(UserError, match=r"broken\.json:\d+: .*invalid JSON"):
        results.load(p)
    with pytest.raises(UserError, match="not found"):
        results.load(tmp_path / "absent.json")


def test_atomic_write_leaves_nothing_on_failure(doc, tmp_path, monkeypatch):
    target = tmp_path / "out" / "out.json"

    def failing_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        results.write(doc, target)
    assert list((tmp_path / "out").iterdir()) == []


def test_invalid_document_is_not_written(tmp_path):
    with pytest.raises(UserError):
        results.write({"runs": []}, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_default_path_is_under_results_runs():
    import datetime as dt
    p = results.default_path(dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc))
    assert str(p) == os.path.join("results", "runs", "hmmbench-20260102T030405Z.json")


def test_jsonable_numpy_values():
    import numpy as np
    out = results.jsonable({"a": np.float32(1.5), "b": np.int64(3), "c": np.array([1, 2]),
                            "d": float("nan"), "e": np.bool_(True)})
    assert out == {"a": 1.5, "b": 3, "c": [1, 2], "d": "NaN", "e": True}


def test_source_digest_tracks_source_bytes(tmp_path, monkeypatch):
    import importlib
    import sys
    from hmmbench.hostinfo import source_digest
    pkg = tmp_path / "digestpkg_x"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("A = 1\n")
    (pkg / "k.cu").write_text("// kernel\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    first = source_digest(("digestpkg_x",))
    assert len(first) == 64 and first == source_digest(("digestpkg_x",))
    (pkg / "k.cu").write_text("// kernel, edited\n")
    assert source_digest(("digestpkg_x",)) != first
    sys.modules.pop("digestpkg_x", None)


def test_atomic_open_binary_leaves_nothing_on_error(tmp_path):
    import pytest
    from hmmbench.fileio import atomic_open
    target = tmp_path / "sub" / "x.bin"
    with atomic_open(target, binary=True) as fh:
        fh.write(b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    with pytest.raises(RuntimeError):
        with atomic_open(target, binary=True) as fh:
            fh.write(b"partial")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"\x00\x01" and sorted(p.name for p in target.parent.iterdir()) == ["x.bin"]


def test_source_commit_is_left_out_when_the_tracked_files_differ_from_it(tmp_path, monkeypatch):
    """A checkout whose files are not its HEAD (edited, or a copy with a stale .git) records no
    commit: the commit would claim sources that did not run."""
    import subprocess
    from hmmbench import hostinfo
    pkg = tmp_path / "hmmbench"
    pkg.mkdir()
    (pkg / "hostinfo.py").write_text("x = 1\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(hostinfo, "__file__", str(pkg / "hostinfo.py"))
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert hostinfo.source_commit() == head.strip()
    (pkg / "hostinfo.py").write_text("x = 2\n")
    assert hostinfo.source_commit() is None
