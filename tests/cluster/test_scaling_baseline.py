"""A scaling study's parallel efficiency needs a baseline: a cell run at one worker count has
none, and the table says so instead of a 1.0 that compares the run with itself."""
from __future__ import annotations

from types import SimpleNamespace

from rich.console import Console

from hmmbench.cluster.scaling import NO_BASELINE, Scaling, fill_efficiency
from hmmbench.report.terminal_printer import TerminalPrinter


def record(model, workers, total, kernel):
    return SimpleNamespace(
        dataset="db", dataset_sha256="d", chunking="whole", backend="b", model=model,
        kind="ssv", workers=workers, status="ok", device="cpu",
        timing_s={"total": total, "kernel": kernel}, gcups_total=1 / total,
        gcups_kernel=1 / kernel, info={"worker_stages": [{"wall": total / 2, "kernel": kernel}]})


def rendered(rows) -> str:
    out = Console(width=200, record=True)
    TerminalPrinter(out).print_scaling(Scaling(rows))
    return out.export_text()


def test_one_worker_count_has_no_baseline():
    records = [record("m1", 2, 0.020, 0.010)]
    (row,) = fill_efficiency(records)
    assert row["baseline_workers"] is None
    assert row["parallel_efficiency"] is None and row["parallel_efficiency_kernel"] is None
    assert records[0].info["parallel_efficiency_basis"] == NO_BASELINE
    text = rendered([row])
    assert text.count("no baseline") >= 3 and "1.00" not in text     # 2 cells + the caption


def test_a_swept_database_at_one_worker_count_has_no_baseline_either():
    rows = fill_efficiency([record("m1", 4, 0.020, 0.010), record("m2", 4, 0.030, 0.020)])
    assert [r["model"] for r in rows] == ["m1", "m2", "all"]
    assert all(r["parallel_efficiency"] is None and r["baseline_workers"] is None
               for r in rows)


def test_two_worker_counts_keep_their_efficiency():
    rows = fill_efficiency([record("m1", 1, 0.020, 0.010), record("m1", 2, 0.016, 0.006)])
    assert rows[1]["baseline_workers"] == 1
    assert abs(rows[1]["parallel_efficiency"] - 0.020 / (2 * 0.016)) < 1e-12
    assert "no baseline" not in rendered(rows)
