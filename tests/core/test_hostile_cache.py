"""The verified reference cache: a damaged, edited or misplaced entry is reported once and
recomputed, never trusted; processes filling one cache at once all finish with correct values."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import REPO
from hmmbench import cli, results
from hmmbench.runner import ReferenceStore, RunConfig
from hmmbench.runner.reference import _atomic_save, _load_entry

from helpers.runner_fakes import toy_dataset, toy_log10, toy_reference



def store_with_notes(cache: Path) -> tuple:
    store = ReferenceStore(toy_reference(), None, RunConfig(cache_dir=cache))
    notes: list = []
    store.notify = notes.append
    return store, notes


@pytest.fixture
def filled(tmp_path):
    """A cache holding the toy dataset's full reference; (cache folder, entry path, values)."""
    ds = toy_dataset()
    store, notes = store_with_notes(tmp_path / "cache")
    values, _, fresh = store.compute(ds.sha256, "full", ds.load())
    assert fresh and not notes
    (entry,) = (tmp_path / "cache").glob("*.npz")
    return tmp_path / "cache", entry, values


def edit_values(entry: Path) -> None:
    """Change one value but keep the metadata: what a damaged or hand-edited entry looks like."""
    values, meta = _load_entry(entry)
    values = values.copy()
    values[0] += 0.5
    _atomic_save(entry, values, meta)


@pytest.mark.parametrize("damage, says", [
    (edit_values, "do not match their sha256"),
    (lambda e: e.write_bytes(e.read_bytes()[:100]), "unreadable"),
    (lambda e: e.write_bytes(b"not a cache entry"), "unreadable"),
])
def test_damaged_entry_is_reported_once_and_recomputed(filled, damage, says):
    cache, entry, good = filled
    ds = toy_dataset()
    damage(entry)
    store, notes = store_with_notes(cache)
    assert store.lookup(ds.sha256, "full") is None
    assert store.lookup(ds.sha256, "full") is None          # still bad, but reported once
    assert len(notes) == 1 and says in notes[0] and entry.name in notes[0]
    values, _, fresh = store.compute(ds.sha256, "full", ds.load())
    assert fresh and np.array_equal(values, good) and store.backend.calls == 1
    again, notes2 = store_with_notes(cache)                  # the entry was rewritten whole
    assert np.array_equal(again.lookup(ds.sha256, "full")[0], good) and not notes2


def test_entry_of_other_inputs_is_not_used(filled):
    cache, entry, good = filled
    other = toy_dataset("other", seed=5)
    store, notes = store_with_notes(cache)
    shutil.copy(entry, store._path(other.sha256, "full"))    # a file under another key
    assert store.lookup(other.sha256, "full") is None
    assert len(notes) == 1 and "other inputs" in notes[0]
    values, _, fresh = store.compute(other.sha256, "full", other.load())
    assert fresh and np.array_equal(values, toy_log10(other.load()))


def test_run_reports_a_damaged_entry_and_stays_right(tmp_path, monkeypatch, capsys):
    """Through the CLI with the real reference: the note is one progress line, the run is ok."""
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["run", "-d", "ren16-t1.1@32", "-b", "numpy", "-b", "numpy-f32", "--repeat", "1",
            "-q", "--json", str(tmp_path / "r.json")]
    assert cli.main(argv) == 0
    (entry,) = (tmp_path / "cache" / "reference").glob("*.npz")
    edit_values(entry)
    capsys.readouterr()
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("reference cache") == 1 and "recomputing" in err
    runs = results.load(tmp_path / "r.json")["runs"]
    assert [r["status"] for r in runs] == ["ok", "ok"] and runs[1]["max_abs_err"] < 1e-4


WORKER = """
import sys
import numpy as np
from cpu_reference.pairhmm.forward import forward_log10
from hmmbench.pairhmm.datasets import resolve
from hmmbench.runner import ReferenceStore, RunConfig
cache, rounds = sys.argv[1], int(sys.argv[2])
ds = resolve("ren16-t1.2@48")
pairs, truth = ds.load(), None
notes = []
for _ in range(rounds):
    store = ReferenceStore.for_config(RunConfig(cache_dir=cache))
    store.notify = notes.append
    values, _, _ = store.compute(ds.sha256, "full", pairs, force=True)   # write, racing
    fresh = ReferenceStore.for_config(RunConfig(cache_dir=cache))
    fresh.notify = notes.append
    hit = fresh.lookup(ds.sha256, "full")                                 # read, racing
    truth = forward_log10(pairs) if truth is None else truth
    assert hit is not None and np.array_equal(hit[0], truth), "wrong values"
    assert np.array_equal(values, truth)
assert not notes, notes
print("ok", rounds)
"""


def test_two_processes_fill_one_cache_at_once(tmp_path):
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "cache"), "25"],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.strip() == "ok 25", err
    assert not list((tmp_path / "cache").glob(".*.tmp"))      # no temp file left behind


class SlowReference(type(toy_reference())):
    """The toy reference, slow enough that a second store asks for the entry meanwhile."""

    def run(self, pairs):
        import time
        time.sleep(0.3)
        return super().run(pairs)


def test_stores_sharing_a_cache_compute_an_entry_once(tmp_path):
    """The entry lock: the second store waits for the first one's entry and reads it."""
    import threading
    ds = toy_dataset()
    backends = [SlowReference("numpy"), SlowReference("numpy")]
    stores = [ReferenceStore(b, None, RunConfig(cache_dir=tmp_path / "cache")) for b in backends]
    fresh: list = []
    threads = [threading.Thread(target=lambda s=s: fresh.append(
        s.compute(ds.sha256, "full", ds.load())[2])) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(fresh) == [False, True]
    assert sum(b.calls for b in backends) == 1
