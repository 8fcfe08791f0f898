"""History: result files ordered by time, per-cell trends, source/device change marks; the
committed results/ files read as they are."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.paths import REPO
from hmmbench import cli, history

from helpers.records import document, run



def write(path: Path, created: str, sources: str, gcups: float, device: str = "cpu") -> str:
    r = run("10s", "cuda-a", 1.0)
    r.update(gcups_kernel=gcups, gcups_total=gcups / 2, device=device)
    doc = document([r])
    doc.update(created=created, source_sha256=sources)
    path.write_text(json.dumps(doc))
    return str(path)


def test_files_are_ordered_by_time_and_changes_marked(tmp_path):
    # written out of order: history sorts by the created time inside the files
    write(tmp_path / "c.json", "2026-01-03T00:00:00+00:00", "bbb", 30.0, device="gpu")
    write(tmp_path / "a.json", "2026-01-01T00:00:00+00:00", "aaa", 10.0)
    write(tmp_path / "b.json", "2026-01-02T00:00:00+00:00", "bbb", 20.0)
    (tmp_path / "notes.json").write_text("{}")          # not a result file: skipped, listed
    hist = history.load_history([str(tmp_path)])
    assert [Path(s.path).name for s in hist.snapshots] == ["a.json", "b.json", "c.json"]
    (points,) = hist.cells.values()
    assert [p.gcups_kernel for p in points] == [10.0, 20.0, 30.0]
    assert [p.marks for p in points] == ["", "S", "D"]
    (row,) = history.trend_rows(hist)
    assert row["change"] == pytest.approx(200.0) and row["marks"] == "S@2, D@3"
    assert row["spark_kernel"][0] == "▁" and row["spark_kernel"][-1] == "█"
    assert [Path(p).name for p, _ in hist.skipped] == ["notes.json"]


def test_other_bytes_under_one_name_are_marked_and_never_trended_across(tmp_path):
    """A dataset file of the same name but other bytes (sha256): marked B, and the change is
    measured over the points of the last bytes only."""
    paths = [write(tmp_path / f"{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", "aaa", g)
             for i, g in enumerate((10.0, 12.0, 40.0, 44.0))]
    for i, path in enumerate(paths):
        doc = json.loads(Path(path).read_text())
        doc["runs"][0]["dataset_sha256"] = ("a" if i < 2 else "b") * 64
        Path(path).write_text(json.dumps(doc))
    hist = history.load_history([str(tmp_path)])
    (points,) = hist.cells.values()
    assert [p.marks for p in points] == ["", "", "B", ""]
    (row,) = history.trend_rows(hist)
    assert (row["first"], row["last"]) == (40.0, 44.0)
    assert row["change"] == pytest.approx(10.0) and row["marks"] == "B@3"


def test_recorded_commits_order_before_creation_time(tmp_path):
    import subprocess
    git = ["git", "-C", str(REPO)]
    try:
        root = subprocess.run(git + ["rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.split()[0]
        head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, IndexError):
        pytest.skip("no git history here")
    # the newer sources ran first, the oldest commit's file was made a day later
    for name, created, commit in (("new.json", "2026-01-01T00:00:00+00:00", head),
                                  ("old.json", "2026-01-02T00:00:00+00:00", root)):
        write(tmp_path / name, created, commit, 1.0)
        doc = json.loads((tmp_path / name).read_text())
        doc["source_commit"] = commit
        (tmp_path / name).write_text(json.dumps(doc))
    hist = history.load_history([str(tmp_path)])
    assert [Path(s.path).name for s in hist.snapshots] == ["old.json", "new.json"]
    assert hist.snapshots[0].sources == root


def test_explicit_bad_file_is_a_user_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert cli.main(["history", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0]
    assert cli.main(["history", str(tmp_path / "missing")]) == 2


def test_committed_results_read_and_plot(tmp_path, capsys):
    dirs = [str(REPO / "results" / d) for d in ("h100", "h200", "cpu-2core")]
    dirs = [d for d in dirs if Path(d).is_dir()]
    if not dirs:
        pytest.skip("no committed results/ here")
    png = tmp_path / "hist.png"
    assert cli.main(["history", *dirs, "-b", "cuda-inter-tile8", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "results/h200/tiles.json" in out.replace("\n", "") or "tiles.json" in out
    assert "cuda-inter-tile8" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    hist = history.load_history(dirs)
    assert not hist.skipped and len(hist.snapshots) >= 20
    # the 1m cell crosses H200 -> H100 -> H200 -> H100 files: device marks appear
    marks = {p.marks for points in hist.cells.values() for p in points}
    assert any("D" in m for m in marks) and any("S" in m for m in marks)


