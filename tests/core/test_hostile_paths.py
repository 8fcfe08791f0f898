"""Every path argument given what is not a regular file -- a FIFO (which would block an open
forever), a device, a directory, a symlink loop, a dangling link -- is refused before it is
opened, with a message that says what it is; the reference cache gets the same treatment; and
every duration and count option is bounded, so that no option makes a run endless."""
from __future__ import annotations

import os
import signal
from contextlib import contextmanager

import pytest

from hmmbench import cli
from helpers.hostile_world import FASTA, GOOD_BLOCK, PROFILE_RUN, RUN, hmm_text, put, refused, \
    world  # noqa: F401 - world is a fixture

#: What sits at the path, and what the message must say.
KINDS = {
    "fifo": "is a FIFO",
    "directory": "is a directory",
    "symlink-loop": "symlink loop",
    "dangling-link": "symlink to a missing file",
    "device": "is a device",
}


def make(world, name: str, kind: str) -> str:
    path = world / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink-loop":
        os.symlink(name, path)
    elif kind == "dangling-link":
        os.symlink("nowhere", path)
    else:
        os.symlink("/dev/zero", path)
    return name


@contextmanager
def no_hang(seconds: int = 20):
    """Fail instead of hanging: SIGALRM interrupts an open() that blocks."""
    def expire(signum, frame):
        raise TimeoutError("blocked")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _profile():
    pytest.importorskip("pyhmmer")


#: Each path argument: (file name to put the thing at, argv using it, needs pyhmmer).
ARGUMENTS = {
    "run-dataset": ("bad.in", lambda p: RUN + ["-d", f"./{p}", "--json", "out.json"], False),
    "score-dataset": ("bad.in", lambda p: ["score", "-b", "numpy", "-d", f"./{p}", "-o",
                                           "s.txt"], False),
    "run-resume": ("bad.json", lambda p: RUN + ["-d", "ren16-t1.1@16", "--resume", p], False),
    "report": ("bad.json", lambda p: ["report", p], False),
    "report-second": ("bad.json", lambda p: ["report", "earlier.json", p], False),
    "compare-baseline": ("bad.json", lambda p: ["compare", p, "earlier.json"], False),
    "compare-candidate": ("bad.json", lambda p: ["compare", "earlier.json", p], False),
    "history": ("bad.json", lambda p: ["history", "earlier.json", p], False),
    "profile-model": ("bad.hmm", lambda p: PROFILE_RUN + ["-d", "db.faa", "--model", p,
                                                         "--json", "out.json"], True),
    "profile-database": ("bad.faa", lambda p: PROFILE_RUN + ["-d", p, "--model", "m.hmm",
                                                            "--json", "out.json"], True),
    "profile-score-model": ("bad.hmm", lambda p: ["score", "--workload", "profile", "-b",
                                                  "profile-numpy", "--kind", "ssv", "-d",
                                                  "db.faa", "--model", p, "-o", "s.txt"], True),
}


#: every argument x kind but history's directory (history searches a directory for result files:
#: test_history_directory_skips_a_fifo)
CASES = [(a, k) for a in ARGUMENTS for k in KINDS if (a, k) != ("history", "directory")]


@pytest.mark.parametrize("argument,kind", CASES, ids=[f"{a}-{k}" for a, k in CASES])
def test_path_argument_is_not_a_regular_file(world, capsys, argument, kind):
    name, argv, profile = ARGUMENTS[argument]
    if profile:
        _profile()
        put(world, "db.faa", FASTA)
        put(world, "m.hmm", hmm_text())
    make(world, name, kind)
    with no_hang():
        line = refused(world, capsys, argv(name), name, KINDS[kind])
    assert "not found" not in line or kind == "dangling-link"


def test_history_directory_skips_a_fifo(world, capsys):
    """A FIFO named *.json inside a searched directory is skipped (never opened)."""
    (world / "runs").mkdir()
    (world / "runs" / "a.json").write_text((world / "earlier.json").read_text())
    (world / "runs" / "b.json").write_text((world / "earlier.json").read_text())
    os.mkfifo(world / "runs" / "fifo.json")
    with no_hang():
        assert cli.main(["history", "runs"]) == 0


def test_summary_directory_with_a_fifo(world, capsys):
    (world / "res" / "gpu").mkdir(parents=True)
    (world / "res" / "gpu" / "a.json").write_text((world / "earlier.json").read_text())
    os.mkfifo(world / "res" / "gpu" / "fifo.json")
    with no_hang():
        assert cli.main(["report", "--summary", "res"]) == 0
    assert "fifo" not in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["fifo", "symlink-loop", "directory"])
def test_output_path_kinds(world, capsys, kind):
    make(world, "out.json", kind)
    needle = {"fifo": "not a regular file", "symlink-loop": "symlink loop",
              "directory": "is a directory"}[kind]
    refused(world, capsys, RUN + ["-d", "ren16-t1.1@16", "--json", "out.json"], "--json",
            needle)


#: What sits where an output folder is asked for, and what the message must say.
FOLDER_KINDS = {"fifo": "not a directory", "file": "not a directory",
                "device": "not a directory", "symlink-loop": "symlink loop",
                "dangling-link": "a symlink to a missing folder",
                "through-a-file": "a part of the path is a file"}
#: The commands that write into a folder: the gate's rounds, a suite's steps.
FOLDER_COMMANDS = {"gate": ["gate", "--out", "{}", "--", "-b", "numpy", "-d", "tiny"],
                   "suite": ["suite", "run", "smoke", "--out", "{}"]}


@pytest.mark.parametrize("kind", list(FOLDER_KINDS))
@pytest.mark.parametrize("command", list(FOLDER_COMMANDS))
def test_output_folder_kinds(world, capsys, command, kind):
    """An output folder that is something else, or cannot be made, is refused before any
    round or step: one line, exit 2 (a symlink loop or a path through a file was a
    FileExistsError / NotADirectoryError: exit 3)."""
    if kind == "file":
        name = put(world, "afile", "x\n")
    elif kind == "through-a-file":
        put(world, "afile", "x\n")
        name = "afile/rounds"
    else:
        name = make(world, "out", kind)
    argv = [a.format(name) for a in FOLDER_COMMANDS[command]]
    refused(world, capsys, argv, FOLDER_KINDS[kind])


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink-loop", "device"])
def test_reference_cache_entry_replaced(world, capsys, kind):
    """A cache entry replaced by a FIFO, directory, loop or device: the run notes it, computes
    the reference again and ends well -- it never blocks on it."""
    argv = RUN + ["-d", "ren16-t1.1@16", "--json", "out.json"]
    assert cli.main(argv) == 0
    entries = list((world.parent / "cache" / "reference").glob("*.npz"))
    assert entries
    for entry in entries:
        entry.unlink()
        make(entry.parent, entry.name, kind)
    capsys.readouterr()
    with no_hang():
        assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "recomputing" in err and KINDS[kind] in err


def test_dataset_by_name_in_the_data_path_is_a_fifo(world, capsys, monkeypatch):
    data = world / "data"
    data.mkdir()
    os.mkfifo(data / "tiny.in")
    monkeypatch.setenv("HMMBENCH_DATA_PATH", str(data))
    from hmmbench.pairhmm.datasets import catalog
    with no_hang():
        refused(world, capsys, RUN + ["-d", "tiny"], "tiny.in", "is a FIFO")
        tiny = next(d for d in catalog() if d.name == "tiny")   # listed as not found
    assert tiny.path is None


# --- every duration and count bounded -----------------------------------------------------
BOUNDS = {
    "warmup-time-1e308": (["--warmup-time", "1e308"], "--warmup-time"),
    "warmup-time-inf": (["--warmup-time", "inf"], "--warmup-time"),
    "max-time-1e308": (["--max-time", "1e308"], "--max-time"),
    "max-time-inf": (["--max-time", "inf"], "--max-time"),
    "max-time-negative": (["--max-time", "-1"], "--max-time"),
    "repeat-huge": (["--repeat", "10000000000"], "--repeat"),
    "repeat-negative": (["--repeat", "-3"], "--repeat"),
    "in-flight-huge": (["--in-flight", "100000000"], "--in-flight"),
    "in-flight-zero": (["--in-flight", "0"], "--in-flight"),
    "sample-pairs-huge": (["--sample-pairs", "100000000000"], "--sample-pairs"),
    "tolerance-inf": (["--tolerance", "inf"], "--tolerance"),
    "cluster-timeout-inf": (["--cluster", "local", "--cluster-timeout", "inf"],
                            "--cluster-timeout"),
    "cluster-timeout-zero": (["--cluster", "local", "--cluster-timeout", "0"],
                             "--cluster-timeout"),
}


@pytest.mark.parametrize("name", list(BOUNDS))
def test_run_option_bounds(world, capsys, name):
    extra, needle = BOUNDS[name]
    refused(world, capsys, ["run", "-b", "numpy", "-q", "-d", "ren16-t1.1@16"] + extra, needle)


@pytest.mark.parametrize("value", ["inf", "1e308", "-1", "nan"])
def test_compare_max_slowdown_bounds(world, capsys, value):
    refused(world, capsys, ["compare", "earlier.json", "earlier.json", "--max-slowdown", value],
            "--max-slowdown")


def test_block_file_given_a_gatk_line(world, capsys):
    """An 8-field line (a GATK line with one more field) where a block header belongs says so."""
    path = put(world, "g8.in", "ACGT ACGT IIII IIII IIII ++++ -1.0 extra\n")
    refused(world, capsys, RUN + ["-d", path], f"{path}:1:", "8 fields", "GATK line",
            "block header")
    path = put(world, "extra-read.in", GOOD_BLOCK.replace("1 1", "1 1", 1)
               + "ACGT IIII IIII IIII ++++\n")
    refused(world, capsys, RUN + ["-d", path], f"{path}:4:", "read line")
