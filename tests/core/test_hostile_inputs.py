"""A corpus of hostile inputs, through the real command line (in-process, real registry and
dataset resolver): every case must end with exit status 2, exactly one line on stderr
(``hmmbench: error: ...``) naming the file and line or the option, no traceback, no output file
left behind and no earlier result file touched. Data files are made by the tests."""
from __future__ import annotations

import json
import os

import pytest

from hmmbench import cli, results

from helpers.hostile_world import (FASTA, GOOD_BLOCK, GOOD_GATK, READ, damaged,
                                   earlier_document, put, refused, world)

__all__ = ["world"]   # the fixture, used by name

RUN = ["run", "-b", "numpy", "--repeat", "1", "-q", "--json", "out.json"]

# --- pair-HMM data files: (file name, content, the location the message must name) ------------
BLOCK_CASES = {
    "header-3-fields": ("1 1 1\n" + READ + "\nACGT\n", ":1:"),
    "header-negative": ("-1 1\n" + READ + "\nACGT\n", ":1:"),
    "header-not-number": ("x 1\n" + READ + "\nACGT\n", ":1:"),
    "header-zero-reads": ("0 1\nACGT\n", ":1:"),
    "truncated-block": ("2 1\n" + READ + "\nACGT\n", ":3:"),
    "huge-count": ("99999999999999999999 1\n" + READ + "\nACGT\n", ":3:"),
    "read-4-fields": ("1 1\nACGT IIII IIII IIII\nACGT\n", ":2:"),
    "read-bad-base": ("1 1\nACXT IIII IIII IIII ++++\nACGT\n", ":2:"),
    "hap-bad-base": ("1 1\n" + READ + "\nAC-T\n", ":3:"),
    "hap-2-fields": ("1 1\n" + READ + "\nACGT ACGT\n", ":3:"),
    "qual-length": ("1 1\nACGT III IIII IIII ++++\nACGT\n", ":2:"),
    "qual-above-93": ("1 1\nACGT II\x7fI IIII IIII ++++\nACGT\n", ":2:"),
    "empty-file": ("", ":1:"),
    "blank-lines-only": ("\n\n  \n", ":1:"),
    "empty-haplotype": ("1 1\n" + READ + "\n\n", ":3:"),
    "utf8-base": ("1 1\nAC\xc3\xa9 III IIII IIII ++++\nACGT\n", ":2:"),
    "binary": (b"\x00\xff\xfe\x01\x02 \x03\n\x00\x00", ":1:"),
}
GATK_CASES = {
    "gatk-6-fields": ("ACGT ACGT IIII IIII IIII ++++\n", ":1:"),
    "gatk-empty-field": ("ACGT\tACGT\tIIII\t\tIIII\t++++\t-1.0\n", ":1:"),
    "gatk-expected-nan": ("# hap-bases read\nACGT ACGT IIII IIII IIII ++++ nan\n", ":2:"),
    "gatk-expected-word": ("ACGT ACGT IIII IIII IIII ++++ minus-one\n", ":1:"),
    "gatk-comments-only": ("# hap-bases read-bases\n# nothing\n", ":1:"),
    "gatk-bad-hap": (GOOD_GATK + "ACZT ACGT IIII IIII IIII ++++ -1.0\n", ":2:"),
    "gatk-qual-length": ("ACGT ACGT IIII IIII III ++++ -1.0\n", ":1:"),
}


@pytest.mark.parametrize("name", list(BLOCK_CASES) + list(GATK_CASES))
def test_pairhmm_file(world, capsys, name):
    content, where = {**BLOCK_CASES, **GATK_CASES}[name]
    path = put(world, f"{name}.in", content)
    refused(world, capsys, RUN + ["-d", path], f"{path}{where}")


def test_pairhmm_file_unreadable_and_folder(world, capsys):
    (world / "folder.in").mkdir()
    refused(world, capsys, RUN + ["-d", str(world / "folder.in")], "folder.in")
    refused(world, capsys, RUN + ["-d", str(world / "missing.in")], "missing.in", "not found")


def test_a_bad_file_after_a_good_one_runs_nothing(world, capsys):
    good = put(world, "good.in", GOOD_BLOCK)
    bad = put(world, "bad.in", BLOCK_CASES["read-bad-base"][0])
    refused(world, capsys, RUN + ["-d", good, "-d", bad], f"{bad}:2:")


# --- profile data files --------------------------------------------------------------------
FASTA_CASES = {
    "no-header": ("MKVLAAG\n", ":1:"),
    "bad-residue": (">p\nMK1V\n", ":2:"),
    "empty-sequence": (">p1\nMKV\n>p2\n\n>p3\nMK\n", ":3:"),
    "stockholm": ("# STOCKHOLM 1.0\np MKV\n//\n", ":1:"),
    "empty": ("", "empty"),
    "binary": (b"\x00\x01\xff\xfe", "FASTA"),
}
PROFILE_RUN = ["run", "--workload", "profile", "-b", "profile-numpy", "--kind", "ssv",
               "--repeat", "1", "-q", "--json", "out.json"]


def _pyhmmer():
    return pytest.importorskip("pyhmmer")


@pytest.mark.parametrize("name", list(FASTA_CASES))
def test_profile_fasta(world, capsys, name):
    _pyhmmer()
    content, where = FASTA_CASES[name]
    path = put(world, f"{name}.faa", content)
    refused(world, capsys, PROFILE_RUN + ["-d", path, "--model", "random-M20"], path, where)


def _hmm_text(alphabet: str = "amino") -> str:
    import pyhmmer
    import io
    hmm = pyhmmer.plan7.HMM.sample(getattr(pyhmmer.easel.Alphabet, alphabet)(), 12, 1)
    hmm.name = b"tiny"
    buf = io.BytesIO()
    hmm.write(buf)
    return buf.getvalue().decode()


@pytest.mark.parametrize("name", ["truncated", "not-hmm", "dna-model", "empty"])
def test_profile_hmm_file(world, capsys, name):
    _pyhmmer()
    text = _hmm_text()
    content = {"truncated": text[:len(text) // 2], "not-hmm": FASTA,
               "dna-model": _hmm_text("dna"), "empty": ""}[name]
    path = put(world, f"{name}.hmm", content)
    db = put(world, "db.faa", FASTA)
    refused(world, capsys, PROFILE_RUN + ["-d", db, "--model", path], path)


def test_profile_hmm_file_good(world, capsys):
    """The control: a sound .hmm file and FASTA run (so the refusals above are about the data)."""
    _pyhmmer()
    model, db = put(world, "ok.hmm", _hmm_text()), put(world, "db.faa", FASTA)
    assert cli.main(PROFILE_RUN + ["-d", db, "--model", model]) == 0
    doc = results.load(world / "out.json")
    assert [r["status"] for r in doc["runs"]] == ["ok"]


# --- options that take a name, number or path -----------------------------------------------
OPTION_CASES = {
    "repeat-zero": (["--repeat", "0"], "--repeat"),
    "repeat-word": (["--repeat", "many"], "--repeat"),
    "max-time-zero": (["--max-time", "0"], "--max-time"),
    "max-time-nan": (["--max-time", "nan"], "--max-time"),
    "warmup-time-negative": (["--warmup-time", "-1"], "--warmup-time"),
    "warmup-time-nan": (["--warmup-time", "nan"], "--warmup-time"),
    "tolerance-nan": (["--tolerance", "nan"], "--tolerance"),
    "tolerance-negative": (["--tolerance", "-1"], "--tolerance"),
    "sample-pairs-zero": (["--sample-pairs", "0"], "--sample-pairs"),
    "chunking-unknown": (["--chunking", "sideways"], "sideways"),
    "chunking-merged-zero": (["--chunking", "merged:0"], "merged:N"),
    "chunking-merged-word": (["--chunking", "merged:lots"], "merged:N"),
    "backend-unknown": (["-b", "nope"], "unknown backend 'nope'"),
    "dataset-unknown": (["-d", "nope"], "unknown dataset 'nope'"),
    "dataset-table-index": (["-d", "ren16-t1.9"], "ren16-t1"),
    "dataset-zero-length": (["-d", "equal-0"], "equal-0"),
    "dataset-too-long": (["-d", "shape-10x5000"], "shape-10x5000"),
    "pairs-1e99": (["-d", "ren16-t1.1@1e99"], "1e99"),
    "pairs-zero": (["-d", "ren16-t1.1@0"], "'0'"),
    "pairs-fraction": (["-d", "ren16-t1.1@1.5"], "1.5"),
    "pairs-word": (["-d", "ren16-t1.1@many"], "many"),
    "pairs-too-much-memory": (["-d", "equal-4096@1e7"], "GiB"),
    "chunks-too-many": (["-d", "chunks@1e12"], "1e12"),
    "real-set-missing": (["-d", "gkl-testdata"], "dataset 'gkl-testdata' not found"),
    "workload-unknown": (["--workload", "nope"], "unknown workload 'nope'"),
    "foreign-option": (["--model", "PF02826"], "--model"),
    "json-directory": (["--json", "."], "is a directory"),
    "json-under-a-file": (["--json", "earlier.json/x.json"], "directory"),
}


@pytest.mark.parametrize("name", list(OPTION_CASES))
def test_run_option(world, capsys, name):
    extra, needle = OPTION_CASES[name]
    base = ["run", "-b", "numpy", "--repeat", "1", "-q", "-d", "ren16-t1.1@16"]
    refused(world, capsys, base + extra, needle)


PROFILE_OPTION_CASES = {
    "model-unknown": (["--model", "nope"], "unknown model 'nope'"),
    "model-size-zero": (["--model", "random-M0"], "random-M0"),
    "model-size-huge": (["--model", "random-M999999"], "random-M999999"),
    "model-seed-zero": (["--model", "query-M10:0"], "seed"),
    "kind-unknown": (["--kind", "sideways"], "unknown score kind 'sideways'"),
    "database-zero": (["-d", "proteins-0"], "proteins-0"),
    "database-huge": (["-d", "proteins-1e11"], "proteins-1e11"),
    "chunking-merged": (["--chunking", "merged"], "chunking 'merged'"),
}


@pytest.mark.parametrize("name", list(PROFILE_OPTION_CASES))
def test_profile_option(world, capsys, name):
    _pyhmmer()
    extra, needle = PROFILE_OPTION_CASES[name]
    base = ["run", "--workload", "profile", "-b", "profile-numpy", "--repeat", "1", "-q",
            "-d", "proteins-2000", "--model", "random-M20"]
    refused(world, capsys, base + extra, needle)


def test_output_device_and_full_disk(world, capsys, monkeypatch):
    """/dev/full (through a link, so that a broken check could never replace the device) is
    refused before any work; a disk that fills up at the end leaves no file and one line."""
    if os.path.exists("/dev/full"):
        os.symlink("/dev/full", world / "full.json")
        refused(world, capsys, ["run", "-b", "numpy", "-d", "ren16-t1.1@16", "--repeat", "1",
                                "--json", "full.json"], "--json full.json", "not a regular file")
        (world / "full.json").unlink()
    import errno
    from hmmbench import fileio

    def full(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(fileio.os, "replace", full)
    refused(world, capsys, ["run", "-b", "numpy", "-d", "ren16-t1.1@16", "--repeat", "1", "-q",
                            "--json", "earlier.json"], "earlier.json", "No space left")
    assert not list(world.glob(".earlier.json.*"))    # no temp file left either


def test_output_unwritable_folder(world, capsys):
    target = "/proc/hmmbench-test/out.json"          # not even root can create files there
    refused(world, capsys, ["run", "-b", "numpy", "-d", "ren16-t1.1@16", "--repeat", "1",
                            "--json", target], "--json", "/proc")


SCORE_CASES = {
    "digits-18": (["--digits", "18"], "--digits"),
    "digits-negative": (["--digits", "-1"], "--digits"),
    "backend-glob-many": (["-b", "numpy*"], "matches 2 backends"),
    "output-directory": (["-o", "."], "is a directory"),
    "backend-unknown": (["-b", "nope"], "unknown backend"),
    "dataset-unknown": (["-d", "nope"], "unknown dataset"),
    "output-missing": (["-o"], "-o"),
}


@pytest.mark.parametrize("name", list(SCORE_CASES))
def test_score_option(world, capsys, name):
    extra, needle = SCORE_CASES[name]
    base = {"-d": "ren16-t1.1@16", "-b": "numpy", "-o": "scores.txt"}
    argv = ["score"]
    for flag, value in base.items():
        if flag not in extra:
            argv += [flag, value]
    refused(world, capsys, argv + extra, needle)


def test_score_profile_needs_one_kind(world, capsys):
    _pyhmmer()
    refused(world, capsys, ["score", "--workload", "profile", "-d", "proteins-2000", "-b",
                            "profile-numpy", "--kind", "pipeline", "-o", "s.txt"], "--kind")


# --- result files for report / compare -------------------------------------------------------
def _doc() -> dict:
    return json.loads(earlier_document())


def _edit(edit) -> str:
    doc = _doc()
    edit(doc)
    return json.dumps(doc)


RESULT_CASES = {
    "truncated": (lambda: earlier_document()[: len(earlier_document()) // 2], "invalid JSON"),
    "empty": (lambda: "", ":1:"),
    "not-object": (lambda: "[1, 2]", "top level"),
    "wrong-schema": (lambda: json.dumps({"runs": []}), "missing"),
    "other-schema-version": (lambda: _edit(lambda d: d.update(schema=99)), "schema version 99"),
    "run-not-object": (lambda: _edit(lambda d: d.update(runs=[3])), "runs[0]"),
    "run-lacks-field": (lambda: _edit(lambda d: d["runs"][0].pop("backend")), "'backend'"),
    "bad-status": (lambda: _edit(lambda d: d["runs"][0].update(status="great")), "great"),
    "timing-string": (lambda: _edit(lambda d: d["runs"][0]["timing_s"].update(total="1s")),
                      "timing_s.total"),
    "timing-nan-string": (lambda: _edit(lambda d: d["runs"][0]["timing_s"].update(total="NaN")),
                          "timing_s.total"),
    "bare-nan": (lambda: earlier_document().replace('"max_abs_err": 0.0', '"max_abs_err": NaN'),
                 "NaN"),
    "bare-infinity": (lambda: earlier_document().replace('"max_abs_err": 0.0',
                                                  '"max_abs_err": -Infinity'), "Infinity"),
    "not-utf8": (lambda: b"\xff\xfe{}", "UTF-8"),
}


@pytest.mark.parametrize("name", list(RESULT_CASES))
def test_report_result_file(world, capsys, name):
    make, needle = RESULT_CASES[name]
    path = put(world, "bad.json", make())
    refused(world, capsys, ["report", path], path, needle)


@pytest.mark.parametrize("name", ["truncated", "other-schema-version", "bare-nan"])
def test_compare_result_file(world, capsys, name):
    make, needle = RESULT_CASES[name]
    path = put(world, "bad.json", make())
    refused(world, capsys, ["compare", "earlier.json", path], path, needle)
    refused(world, capsys, ["compare", path, "earlier.json"], path, needle)


def test_report_and_compare_paths_and_options(world, capsys):
    refused(world, capsys, ["report", "missing.json"], "missing.json")
    refused(world, capsys, ["report", "."], "is a directory")
    refused(world, capsys, ["report", "earlier.json", "--format", "pdf"], "--format")
    refused(world, capsys, ["report", "earlier.json", "--pivot", "colour"], "colour")
    refused(world, capsys, ["report", "earlier.json", "--plot", "."], "--plot", "directory")
    refused(world, capsys, ["compare", "earlier.json", "earlier.json", "--max-slowdown", "-5"],
            "--max-slowdown")
    refused(world, capsys, ["compare", "earlier.json", "earlier.json", "--max-slowdown", "nan"],
            "--max-slowdown")
    refused(world, capsys, ["compare", "earlier.json"], "candidate")


def test_compare_other_workload(world, capsys):
    other = _edit(lambda d: d["runs"][0].update(workload="profile"))
    path = put(world, "profile.json", other)
    refused(world, capsys, ["compare", "earlier.json", path], "nothing to compare")


def test_report_plot_unknown_type(world, capsys):
    pytest.importorskip("matplotlib")
    doc = _doc()
    doc["runs"][0].update(gcups_total=1.0, gcups_kernel=2.0)
    path = put(world, "g.json", json.dumps(doc))
    refused(world, capsys, ["report", path, "--plot", "chart.xyz"], "--plot", ".xyz")
    again = put(world, "g2.json", json.dumps(doc))
    refused(world, capsys, ["history", path, again, "--plot", "chart.xyz"], ".xyz")
    refused(world, capsys, ["history", path, "--plot", "."], "--plot", "directory")


# --- the rest of the command line ------------------------------------------------------------
MISC_CASES = {
    "no-command": ([], "COMMAND"),
    "unknown-command": (["frobnicate"], "frobnicate"),
    "unknown-option": (["run", "--frobnicate"], "--frobnicate"),
    "list-workload": (["list", "--workload", "nope"], "unknown workload"),
    "datasets-list-workload": (["datasets", "list", "--workload", "nope"], "unknown workload"),
    "datasets-fetch-unknown": (["datasets", "fetch", "nope"], "unknown fetchable dataset"),
    "datasets-no-action": (["datasets"], "ACTION"),
    "suite-unknown": (["suite", "run", "nope"], "unknown suite 'nope'"),
    "suite-out-under-a-file": (["suite", "run", "smoke", "--out", "earlier.json/x"],
                               "--out earlier.json/x: not found: a part of the path is a file"),
    "history-missing": (["history", "missing.json"], "missing.json"),
    "history-min-files": (["history", "earlier.json", "--min-files", "0"], "--min-files"),
    "axis-syntax": (["run", "-b", "numpy", "-d", "ren16-t1.1@16", "--axis", "tile"], "--axis"),
    "axis-value": (["run", "-b", "cuda-inter", "-d", "ren16-t1.1@16", "--axis", "tile=3"],
                   "tile=3"),
    "cluster-address": (["run", "-b", "numpy", "-d", "ren16-t1.1@16", "--cluster", "nope"],
                        "--cluster"),
    "resume-cluster": (["run", "-b", "numpy", "-d", "ren16-t1.1@16", "--cluster", "local",
                        "--resume", "earlier.json"], "--resume"),
}


@pytest.mark.parametrize("name", list(MISC_CASES))
def test_misc(world, capsys, name):
    argv, needle = MISC_CASES[name]
    refused(world, capsys, argv, needle)


def test_file_name_with_a_line_break_stays_one_line(world, capsys):
    path = put(world, "two\nlines.in", BLOCK_CASES["read-bad-base"][0])
    line = refused(world, capsys, RUN + ["-d", path], "two\\nlines.in:2:")
    assert "\n" not in line


# --- property-based: any damage to a sound file is refused with its file and line -----------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from hmmbench.errors import InputError  # noqa: E402
from hmmbench.pairhmm.datasets import detect_format  # noqa: E402
from hmmbench.pairhmm.datasets.blockfmt import load_block  # noqa: E402
from hmmbench.pairhmm.datasets.gatkfmt import load_gatk  # noqa: E402

SOUND = {"block": (GOOD_BLOCK + "2 1\n" + READ + "\n" + READ + "\nACGTTGCA\n").encode(),
         "gatk": ("# hap-bases read-bases\n" + GOOD_GATK * 3).encode()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(sorted(SOUND)), data=st.data())
def test_damaged_files_load_or_name_a_line(tmp_path, fmt, data):
    """Bytes changed, cut or inserted anywhere: the loader either reads the file or raises an
    InputError at a line that exists -- never any other exception."""
    raw = damaged(SOUND[fmt], data, st.integers(0, 255))
    path = tmp_path / "damaged.in"
    path.write_bytes(raw)
    loader = load_gatk if detect_format(path) == "gatk" else load_block
    try:
        pairs = loader(path)
    except InputError as exc:
        n_lines = max(1, len(raw.splitlines()))
        assert exc.path == str(path) and exc.line is not None and 1 <= exc.line <= n_lines
        assert "\n" not in exc.message
    else:
        assert pairs.n_pairs >= 1
