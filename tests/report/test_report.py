"""Reporter: units, status/throttle marks, notes; rendering stored and fresh results alike."""
from __future__ import annotations

import io

from rich.console import Console

from hmmbench import report
from hmmbench.runner import RunRecord


def render_text(runs) -> str:
    buf = io.StringIO()
    report.render(runs, Console(file=buf, width=220, color_system=None))
    return buf.getvalue()


def test_units():
    assert report.fmt_seconds(3.2e-6) == "3.2 µs"
    assert report.fmt_seconds(0.0451) == "45.1 ms"
    assert report.fmt_seconds(1.234) == "1.23 s"
    assert report.fmt_seconds(600) == "10 min"
    assert report.fmt_seconds(None) == "-" and report.fmt_seconds(0) == "0"
    assert report.fmt_count(420_144_629) == "420M" and report.fmt_count(3550) == "3.55k"
    assert report.fmt_error(float("inf")) == "NaN/inf" and report.fmt_error(2.5e-7) == "2.5e-07"


def record(backend, status="ok", **kw) -> RunRecord:
    r = RunRecord(dataset="10s", dataset_sha256="x", pairs=3550, cells=62_380_634,
                  backend=backend, api="cuda", family="warp", precision="float32",
                  status=status, **kw)
    if status in ("ok", "mismatch"):
        r.timing_s = {"prep": 1e-3, "h2d": 2e-4, "kernel": 5e-3, "d2h": 1e-5, "total": 7e-3}
        r.gcups_kernel, r.gcups_total, r.repeats, r.n_checked = 12.5, 8.9, 5, 3550
        r.max_abs_err = 3e-6
    return r


def test_table_rows_statuses_and_notes():
    runs = [record("cuda-fast", info={"throttled": True, "sm_clock_mhz_min": 1500,
                                      "sm_clock_mhz_max": 1980}),
            record("cuda-bad", status="mismatch", reason="12 of 3550 checked pairs differ"),
            record("opencl-x", status="unavailable", reason="pyopencl not installed")]
    text = render_text(runs)
    assert "10s [original]: 3.55k pairs, 62.4M cells" in text
    assert "5 ms" in text and "12.5" in text and "8.9" in text
    assert report.THROTTLE_MARK in text and "throttled (SM clock 1500-1980 MHz)" in text
    assert "12 of 3550 checked pairs differ" in text
    assert "pyopencl not installed" in text
    # Unavailable runs show dashes, not zeros.
    line = next(l for l in text.splitlines() if l.startswith("│ opencl-x"))
    assert "0 ms" not in line and "-" in line


def test_stored_and_fresh_render_alike():
    runs = [record("cuda-fast"), record("numpy", speedup_vs_reference=1.0)]
    fresh = render_text(runs)
    stored = render_text([r.to_dict() for r in runs])
    assert fresh == stored


def test_groups_by_dataset_and_chunking():
    a, b = record("x"), record("x")
    b.chunking = "merged"
    groups = report.by_dataset([a.to_dict(), b.to_dict()])
    assert list(groups) == [("10s", "original"), ("10s", "merged")]


def test_plain_progress_line():
    buf = io.StringIO()
    p = report.PlainProgress(buf)
    p.start(2)
    p.end(record("cuda-fast"))
    p.end(record("opencl-x", status="unavailable", reason="no driver"))
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("[1/2] 10s [original] cuda-fast: ok total 7 ms x5")
    assert lines[1] == "[2/2] 10s [original] opencl-x: unavailable (no driver)"
    p.start(1)    # a second benchmark (a scaling study's next worker count) counts afresh
    p.end(record("cuda-fast"))
    assert buf.getvalue().splitlines()[2].startswith("[1/1] ")


def test_rich_progress_runs_without_a_terminal():
    buf = io.StringIO()
    p = report.RichProgress(Console(file=buf, width=120, force_terminal=True))
    p.start(1)
    p.begin("[weird].in", "cuda-x")
    p.repeat(2)
    p.end(record("cuda-x", status="error", reason="boom [x]"))
    p.stop()
    text = buf.getvalue()
    assert "[weird].in × cuda-x (" in text       # brackets are not markup
    assert "10s [original] × cuda-x: " in text and "boom [x]" in text


def test_markdown_and_csv_share_the_table_cells():
    runs = [record("cuda-fast", info={"throttled": True}),
            record("opencl-x", status="unavailable", reason="no | driver")]
    md = report.markdown(runs)
    lines = md.splitlines()
    assert lines[0] == "**10s [original]: 3.55k pairs, 62.4M cells**"
    header = lines[2]
    assert header.count("|") == len(report.COLUMNS) + 1
    row = next(l for l in lines if l.startswith("| cuda-fast"))
    assert f"{report.THROTTLE_MARK} 7 ms" in row and "| 12.5 |" in row
    assert "- opencl-x [unavailable]: no | driver" in md
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(report.csv_text(runs))))
    assert rows[0]["backend"] == "cuda-fast" and float(rows[0]["kernel_s"]) == 5e-3
    assert rows[0]["throttled"] == "True" and rows[1]["status"] == "unavailable"
    assert rows[1]["total_s"] == ""


def test_pivot_datasets_by_backends():
    def run(backend, chunking, gcups, status="ok"):
        return dict(record(backend, status).to_dict(), chunking=chunking, gcups_kernel=gcups)
    runs = [run("a", "original", 10.0), run("b", "original", 20.0), run("a", "merged", 30.0),
            run("b", "merged", 40.0, status="mismatch")]
    rows, cols, cells = report.pivot(runs, "gcups_kernel")
    assert rows == [("10s", "original"), ("10s", "merged")] and cols == ["a", "b"]
    assert cells[("10s", "merged"), "a"] == "30" and cells[("10s", "merged"), "b"] == "mismatch"
    md = report.pivot_markdown(runs, "gcups_kernel").splitlines()
    assert md[0] == "| dataset | chunking | a | b |"
    assert md[3] == "| 10s | merged | 30 | mismatch |"
    buf = io.StringIO()
    printer = report.TerminalPrinter(Console(file=buf, width=120, color_system=None))
    printer.print_pivot(report.make_pivot(runs, "gcups_kernel"))
    assert "merged" in buf.getvalue() and "mismatch" in buf.getvalue()


def test_pivot_unknown_metric():
    import pytest
    from hmmbench.errors import UserError
    with pytest.raises(UserError, match="unknown pivot metric"):
        report.pivot([], "speed")


def test_pivot_names_the_device_when_backends_repeat_across_devices():
    def run(device, gcups):
        return dict(record("opencl-x").to_dict(), chunking="merged", device=device,
                    gcups_kernel=gcups)
    rows, cols, cells = report.pivot([run("CPU A", 1.0), run("CPU B", 2.0)], "gcups_kernel")
    assert cols == ["opencl-x (CPU A)", "opencl-x (CPU B)"]
    assert cells[rows[0], "opencl-x (CPU B)"] == "2"


def test_stage_spread_min_median_max():
    assert report.fmt_spread(0.0631, 0.0628, 0.095) == "63.1 ms (62.8–95)"
    assert report.fmt_spread(0.0631, 0.06311, 0.06309) == "63.1 ms"   # same at 3 digits
    assert report.fmt_spread(0.0631) == "63.1 ms" and report.fmt_spread(0, 0, 0) == "0"
    # the spread in the median's unit and digits, never an exponent
    assert report.fmt_spread(202e-6, 146e-6, 8.524e-3) == "202 µs (146–8520)"
    assert report.fmt_spread(1.5e-3, 0.8e-6, 2e-3) == "1.5 ms (0.0008–2)"
    r = record("cuda-fast")
    r.timing_min_s = dict(r.timing_s, kernel=4.9e-3, total=6.5e-3)
    r.timing_max_s = dict(r.timing_s, kernel=7.5e-3, total=1.1e-2)
    row = report.row_cells(r.to_dict())
    assert row[1:6] == ["1 ms", "200 µs", "5 ms (4.9–7.5)", "10 µs", "7 ms (6.5–11)"]
    assert "5 ms (4.9–7.5)" in report.markdown([r])


def _curve_runs():
    """Runs of two backends on three equal-L sets (a peak curve) and a real set."""
    runs = []
    for L, g in ((64, 10.0), (128, 20.0), (256, 30.0)):
        for b, f in (("cuda-a", 1.0), ("opencl-a", 0.5)):
            rec = record(b, chunking="merged")
            rec.dataset = f"equal-{L}@1e4"
            rec.gcups_kernel, rec.gcups_total, rec.api = g * f, g * f / 3, b.split("-")[0]
            runs.append(rec.to_dict())
    runs.append(dict(record("cuda-a").to_dict(), dataset="1m"))
    return runs


def test_peak_curve_and_stage_data():
    from hmmbench.report import figures
    curves = figures.peak_curves(_curve_runs())
    assert list(curves) == ["equal@1e4 [merged]"]
    line = curves["equal@1e4 [merged]"]["cuda-a"]
    assert [p[0] for p in line] == [64, 128, 256] and [p[1] for p in line] == [10.0, 20.0, 30.0]
    stages = figures.stage_groups(_curve_runs())
    (name, st), _ = stages["equal-64@1e4 [merged]"]
    assert name == "cuda-a" and set(st) == {"prep", "h2d", "kernel", "d2h", "other"}
    ratios = figures.api_ratios(_curve_runs())
    assert len(ratios) == 3 and ratios[0][1] == "a" and ratios[0][2] == {"cuda": 10.0,
                                                                          "opencl": 5.0}


def test_plot_writes_bars_peak_and_stages(tmp_path):
    import pytest
    pytest.importorskip("matplotlib")
    from hmmbench.report import plots
    written = plots.plot_all(_curve_runs(), tmp_path / "g.png")
    assert [p.name for p in written] == ["g.png", "g-peak.png", "g-stages.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)
