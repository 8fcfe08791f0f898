"""The published JSON Schema of result files agrees with hmmbench.results: every committed result
file and every freshly written one passes it, and what results.validate rejects it rejects."""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from hmmbench import cli, results
from hmmbench.errors import UserError
from hmmbench.runner import ReferenceStore, RunConfig, run_benchmark

from helpers.paths import REPO
from helpers.runner_fakes import ToyBackend, launches_by_batch, toy_dataset, toy_reference

#: hmmbench run's result files: results/ holds nothing else
COMMITTED = sorted((REPO / "results").rglob("*.json"))


@pytest.fixture(scope="module")
def validator():
    schema = results.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture
def doc(tmp_path):
    cfg = RunConfig(repeat=2, cache_dir=tmp_path / "cache")
    bench = run_benchmark([toy_dataset()], [ToyBackend("good"), ToyBackend("nan", nan=True),
                                            ToyBackend("gone", unavailable="no device"),
                                            ToyBackend("broken", raise_on_run="boom")],
                          cfg, launches_fn=launches_by_batch,
                          refs=ReferenceStore(toy_reference(), None, cfg))
    return results.make_document(bench, ["hmmbench", "run"])


def test_the_schema_is_the_version_results_writes():
    schema = results.json_schema()
    assert schema["$id"].endswith(f":{results.SCHEMA_VERSION}")
    assert schema["properties"]["schema"]["maximum"] == results.SCHEMA_VERSION
    assert f"schema {results.SCHEMA_VERSION}" in schema["title"]
    assert set(schema["required"]) == set(results.TOP_LEVEL)
    run = schema["$defs"]["run"]
    assert set(run["required"]) == set(results.RUN_FIELDS)
    assert tuple(run["properties"]["status"]["enum"]) == results.STATUSES


def test_committed_result_files_pass_it(validator):
    assert COMMITTED, "no committed result files found under results/"
    for path in COMMITTED:
        doc = json.loads(path.read_text(encoding="utf-8"))
        errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, f"{path.relative_to(REPO)}: {errors[:3]}"


def test_freshly_written_files_pass_it(doc, tmp_path, validator):
    path = results.write(doc, tmp_path / "r.json")
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert {r["status"] for r in stored["runs"]} >= {"ok", "mismatch", "unavailable", "error"}
    assert any(r["max_abs_err"] == "Infinity" for r in stored["runs"])   # stored non-finite
    validator.validate(stored)


def test_a_file_written_by_hmmbench_run_passes_it(tmp_path, monkeypatch, validator):
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run.json"
    assert cli.main(["run", "--dataset", "ren16-t1.1@16", "--backend", "numpy*", "--repeat", "1",
                     "--json", str(out), "--quiet"]) == 0
    validator.validate(json.loads(out.read_text(encoding="utf-8")))


@pytest.mark.parametrize("mutate", [
    lambda d: d.pop("runs"),
    lambda d: d.pop("host"),
    lambda d: d.__setitem__("schema", results.SCHEMA_VERSION + 1),
    lambda d: d.__setitem__("devices", {}),
    lambda d: d["runs"][0].pop("status"),
    lambda d: d["runs"][0].pop("dataset_sha256"),
    lambda d: d["runs"][0].__setitem__("status", "great"),
    lambda d: d["runs"][0].__setitem__("repeats", "three"),
    lambda d: d["runs"][0].__setitem__("gcups_kernel", "fast"),
    lambda d: d["runs"][0]["timing_s"].__setitem__("total", "x"),
    lambda d: d["runs"][0]["samples_s"].__setitem__("total", [1.0, "x"]),
    lambda d: d["runs"][0].__setitem__("samples_s", [1.0]),
    lambda d: d.__setitem__("not_run", [{"backend": "x"}]),
    lambda d: d.__setitem__("runs", ["not a record"]),
])
def test_what_validate_rejects_the_schema_rejects(doc, validator, mutate):
    bad = copy.deepcopy(results.jsonable(doc))
    validator.validate(bad)
    results.validate(bad, "good.json")
    mutate(bad)
    with pytest.raises(UserError):
        results.validate(bad, "bad.json")
    assert not validator.is_valid(bad)
