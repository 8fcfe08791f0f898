"""Text inputs that are not what they claim: bytes that are not UTF-8 in every text input,
JSON nested past any sense, markup in every string a report prints, numbers strict JSON does not
have (``1e400``), stage times of zero or below -- each refused with its file (and line) and
exit status 2, never the exit 3 of an unexpected error; markup is printed as it is."""
from __future__ import annotations

import json

import pytest

from hmmbench import cli, results
from helpers.hostile_world import (FASTA, GOOD_BLOCK, PROFILE_RUN, RUN, earlier_document,
                           edited_document, hmm_text, put, refused, world)  # noqa: F401

E9 = b"\xe9"

# --- bytes that are not UTF-8 -------------------------------------------------------------
DATA_FILES = {     # name: (bytes, line the message names)
    "block-header": (b"1\xe9 1\nACGT IIII IIII IIII ++++\nACGT\n", 1),
    "block-read": (b"1 1\nAC\xe9T IIII IIII IIII ++++\nACGT\n", 2),
    "block-quality": (b"1 1\nACGT II\xe9I IIII IIII ++++\nACGT\n", 2),
    "block-haplotype": (b"1 1\nACGT IIII IIII IIII ++++\nAC\xe9T\n", 3),
    "gatk-haplotype": (b"# h\nAC\xe9T ACGT IIII IIII IIII ++++ -1.0\n", 2),
    "gatk-expected": (b"# h\nACGT ACGT IIII IIII IIII ++++ -1.\xe9\n", 2),
    "gatk-gcp": (b"ACGT ACGT IIII IIII IIII ++\xe9+ -1.0\n", 1),
}


@pytest.mark.parametrize("name", list(DATA_FILES))
def test_pairhmm_file_not_utf8(world, capsys, name):
    content, line = DATA_FILES[name]
    path = put(world, "bad.in", content)
    refused(world, capsys, RUN + ["-d", path, "--json", "out.json"], f"{path}:{line}:")
    refused(world, capsys, ["score", "-b", "numpy", "-d", path, "-o", "s.txt"],
            f"{path}:{line}:")


FASTA_FILES = {
    "first-header": (b">caf\xe9 protein\nMKVLAAG\n", 1),
    "sequence": (b">p1\nMKV\xe9AAG\n", 2),
    "later-header": (b">p1\nMKVLAAG\n>p\xe9\nMKV\n", 3),
    "latin1-description": (b">p1 prot\xe9ine\nMKVLAAG\n>p2\nMKV\n", 1),
}


@pytest.mark.parametrize("name", list(FASTA_FILES))
def test_fasta_not_utf8(world, capsys, name):
    pytest.importorskip("pyhmmer")
    content, line = FASTA_FILES[name]
    db, model = put(world, "db.faa", content), put(world, "m.hmm", hmm_text())
    refused(world, capsys, PROFILE_RUN + ["-d", db, "--model", model, "--json", "out.json"],
            f"{db}:{line}:", "UTF-8")


def _result_with_byte() -> tuple:
    """A result file with byte 0xe9 in the backend's name, and that line's number."""
    text = earlier_document()
    lines = text.encode().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"backend": "numpy"' in line)
    lines[at] = lines[at].replace(b"numpy", b"nump" + E9)
    return b"".join(lines), at + 1


#: Every command that reads result files, the bad file given at ``{}``.
RESULT_READERS = {
    "report": ["report", "{}"],
    "report-csv": ["report", "--format", "csv", "earlier.json", "{}"],
    "report-html": ["report", "{}", "--html", "page.html"],
    "compare-baseline": ["compare", "{}", "earlier.json"],
    "compare-candidate": ["compare", "earlier.json", "{}"],
    "history": ["history", "earlier.json", "{}"],
    "resume": RUN + ["-d", "ren16-t1.1@16", "--resume", "{}"],
}


def _argv(reader: str, path: str) -> list:
    return [path if a == "{}" else a for a in RESULT_READERS[reader]]


@pytest.mark.parametrize("reader", list(RESULT_READERS))
def test_result_file_not_utf8(world, capsys, reader):
    content, line = _result_with_byte()
    path = put(world, "bad.json", content)
    refused(world, capsys, _argv(reader, path), f"{path}:{line}:", "UTF-8")


# --- JSON nested past any sense ------------------------------------------------------------
NESTED = {
    "arrays-100000": lambda: "[" * 100_000 + "]" * 100_000,
    "objects-100000": lambda: '{"a":' * 100_000 + "1" + "}" * 100_000,
    "arrays-200": lambda: "[" * 200 + "]" * 200,
    "deep-params": lambda: edited_document(
        lambda d: d["runs"][0].update(params=json.loads('{"a":' * 80 + "1" + "}" * 80))),
}


@pytest.mark.parametrize("reader", list(RESULT_READERS))
@pytest.mark.parametrize("shape", list(NESTED))
def test_deeply_nested_json(world, capsys, reader, shape):
    path = put(world, "deep.json", NESTED[shape]().encode())
    refused(world, capsys, _argv(reader, path), path, "nested")


# --- numbers strict JSON does not have; times that cannot be ------------------------------
def _run_edit(**fields):
    def edit(doc):
        run = doc["runs"][0]
        for key, value in fields.items():
            if "." in key:
                outer, inner = key.split(".")
                run[outer][inner] = value
            else:
                run[key] = value
    return edit


NUMBER_CASES = {
    "1e400-error": (lambda: earlier_document().replace('"max_abs_err": 0.0',
                                                       '"max_abs_err": 1e400'), "out of range"),
    "minus-1e400-time": (lambda: earlier_document().replace('"total": 1.0', '"total": -1e400',
                                                            1), "out of range"),
    "1e999-gcups": (lambda: edited_document(_run_edit(gcups_total=1.0)).replace(
        '"gcups_total": 1.0', '"gcups_total": 1e999'), "out of range"),
    "total-zero": (lambda: edited_document(_run_edit(**{"timing_s.total": 0.0})), "timing_s.total"),
    "total-negative": (lambda: edited_document(_run_edit(**{"timing_s.total": -1.0})),
                       "negative"),
    "kernel-negative": (lambda: edited_document(_run_edit(**{"timing_s.kernel": -0.5})),
                        "timing_s.kernel"),
    "min-negative": (lambda: edited_document(_run_edit(**{"timing_min_s.total": -2.0})),
                     "timing_min_s.total"),
    "max-zero": (lambda: edited_document(_run_edit(**{"timing_max_s.total": 0})),
                 "timing_max_s.total"),
    "sample-negative": (lambda: edited_document(_run_edit(samples_s={"total": [1.0, -1.0]})),
                        "samples_s.total[1]"),
    "sample-zero-total": (lambda: edited_document(_run_edit(samples_s={"total": [0.0]})),
                          "samples_s.total[0]"),
    "time-string-inf": (lambda: edited_document(_run_edit(**{"timing_s.total": "Infinity"})),
                        "not a number"),
}


@pytest.mark.parametrize("reader", ["report", "compare-baseline", "compare-candidate",
                                    "history", "resume"])
@pytest.mark.parametrize("name", list(NUMBER_CASES))
def test_numbers_and_times_refused(world, capsys, name, reader):
    make, needle = NUMBER_CASES[name]
    path = put(world, "bad.json", make().encode())
    refused(world, capsys, _argv(reader, path), path, needle)


def test_zero_time_of_a_stage_a_backend_lacks_is_sound(world, capsys):
    """A peer without an h2d stage stores 0 for it: that is no error."""
    doc = json.loads(edited_document(_run_edit(**{"timing_s.h2d": 0.0})))
    results.validate(doc, "doc")


def test_identical_files_keep_their_own_names(world, capsys):
    a, b = put(world, "a.in", GOOD_BLOCK), put(world, "b.in", GOOD_BLOCK)
    assert cli.main(RUN + ["-d", a, "-d", b, "--json", "out.json"]) == 0
    doc = results.load(world / "out.json")
    assert [r["dataset"] for r in doc["runs"]] == ["a.in", "b.in"]
    assert len({r["dataset_sha256"] for r in doc["runs"]}) == 1


@pytest.mark.parametrize("argv", [
    ["compare", "earlier.json", "earlier.json", "--stage", "nosuch"],
    ["compare", "earlier.json", "earlier.json", "--stage", "[bold]x[/]"],
    ["gate", "--out", "rounds", "--stage", "nosuch", "--", "-b", "numpy", "-d", "tiny"],
    ["gate", "--out", "judged", "--judge", "--stage", "nosuch"]],
    ids=["compare", "compare-markup", "gate", "gate-judge"])
def test_a_stage_nothing_timed_is_refused(world, capsys, argv):
    """A --stage no run timed compared nothing, and the gate passed (exit 0): refused, one
    line naming the stage (and, of result files, the stages they time); no round run."""
    if "--judge" in argv:
        (world / "judged").mkdir()
        for side in ("baseline", "candidate"):
            (world / "judged" / f"round-01.{side}.json").write_text(earlier_document())
    line = refused(world, capsys, argv, "--stage '")
    assert not (world / "rounds").exists()
    if argv[0] == "compare" or "--judge" in argv:
        assert "they time: total" in line
