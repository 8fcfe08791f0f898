"""What the hostile-input tests share: a work folder holding an earlier result file, and the
promise of a refused input checked on the real command line (in-process: ``cli.main(argv)``)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from hmmbench import cli, results
from hmmbench.runner import Benchmark, RunRecord

READ = "ACGT IIII IIII IIII ++++"
GOOD_BLOCK = f"1 1\n{READ}\nACGTACGT\n"
GOOD_GATK = "ACGTACGT ACGT IIII IIII IIII ++++ -3.0\n"
FASTA = ">p1\nMKVLAAGIVGA\n>p2\nMSTNPKPQRKT\n"
RUN = ["run", "-b", "numpy", "--repeat", "1", "-q", "--warmup-time", "0"]
PROFILE_RUN = ["run", "--workload", "profile", "-b", "profile-numpy", "--kind", "ssv",
               "--repeat", "1", "-q", "--warmup-time", "0"]

_EARLIER: list = []


def earlier_document() -> str:
    """The text of a valid result file, as an earlier run would have left it."""
    if not _EARLIER:
        rec = RunRecord(dataset="toy", dataset_sha256="0" * 64, pairs=1, cells=32,
                        backend="numpy", api="numpy", family="reference", precision="float64",
                        status="ok", repeats=1, timing_s={"total": 1.0},
                        timing_min_s={"total": 1.0}, timing_max_s={"total": 1.0},
                        max_abs_err=0.0, n_checked=1)
        doc = results.make_document(Benchmark([rec], [], "original", {}), ["hmmbench", "run"])
        _EARLIER.append(json.dumps(doc, indent=1) + "\n")
    return _EARLIER[0]


def edited_document(edit) -> str:
    doc = json.loads(earlier_document())
    edit(doc)
    return json.dumps(doc)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A work folder holding an earlier result file; private caches; no real data sets."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "earlier.json").write_text(earlier_document())
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HMMBENCH_DATA_PATH", str(tmp_path / "nodata"))
    monkeypatch.chdir(work)
    return work


def snapshot(folder: Path) -> dict:
    """Every regular file under ``folder`` with its bytes (FIFOs and links to devices: by name)."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_symlink() or not p.is_file():
            out[p.relative_to(folder)] = None
        else:
            out[p.relative_to(folder)] = p.read_bytes()
    return out


def refused(world: Path, capsys, argv: list, *needles: str) -> str:
    """Run ``hmmbench argv``; assert the promise of a refused input (exit 2, one line naming
    the problem, no traceback, nothing written or changed); return the line."""
    before = snapshot(world)
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as exc:            # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("[")]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("hmmbench: error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert snapshot(world) == before     # nothing written, every input intact
    return lines[0]


def put(world: Path, name: str, data) -> str:
    path = world / name
    path.write_bytes(data.encode("latin-1") if isinstance(data, str) else data)
    return str(path)


def hmm_text(M: int = 6, alphabet: str = "amino", seed: int = 1) -> str:
    """A sound HMMER3 text model written by pyhmmer."""
    import pyhmmer
    hmm = pyhmmer.plan7.HMM.sample(getattr(pyhmmer.easel.Alphabet, alphabet)(), M, seed)
    hmm.name = b"tiny"
    buf = io.BytesIO()
    hmm.write(buf)
    return buf.getvalue().decode()


def damaged(raw: bytes, data, bytes_drawn) -> bytes:
    """``raw`` with one to three bytes set, runs cut or bytes inserted at places hypothesis
    draws (``data``: ``st.data()``); the bytes written come from the strategy ``bytes_drawn``."""
    from hypothesis import strategies as st
    out = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(out)))
        action = data.draw(st.sampled_from(["set", "cut", "insert"]))
        byte = data.draw(bytes_drawn)
        if action == "set" and at < len(out):
            out[at] = byte
        elif action == "cut":
            del out[at:at + data.draw(st.integers(1, 12))]
        else:
            out[at:at] = bytes([byte])
    return bytes(out)
