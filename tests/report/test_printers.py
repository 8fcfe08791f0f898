"""Every printer renders realistic result documents: at 80 and 120 columns the terminal keeps
every name whole, the GCUPS, status and verdict columns, and no line is wider than the console;
user strings that look like rich markup print as themselves; the other printers (markdown, CSV,
JSON, HTML) carry the same figures; several outputs at once go through Multiplex."""
from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console

from hmmbench import cli, compare, history, report
from hmmbench.cluster.scaling import of_document
from hmmbench.report import (Column, CsvPrinter, HtmlPrinter, JsonPrinter, Listing,
                             MarkdownPrinter, Multiplex, TerminalPrinter, make_pivot)

from helpers.printer_docs import (BACKENDS, BOLD, DATASET, LONG, MARKUP, candidate, cluster_doc,
                              pairhmm_doc)

WIDTHS = (80, 120)


def terminal(width: int):
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    return TerminalPrinter(console), console


def fits(console, width: int) -> str:
    text = console.export_text()
    wide = [line for line in text.splitlines() if len(line) > width]
    assert not wide, f"lines over {width} columns: {wide[:3]}"
    return text


def figures(doc) -> set:
    """The GCUPS figures as the run table writes them."""
    return {report.fmt_number(r[k]) for r in doc["runs"] for k in ("gcups_kernel", "gcups_total")
            if r.get(k) is not None}


@pytest.mark.parametrize("width", WIDTHS)
def test_run_report_keeps_names_gcups_and_status(width):
    doc = pairhmm_doc()
    printer, console = terminal(width)
    printer.print_run(doc, "results/x[y].json")
    text = fits(console, width)
    for header in ("backend", "GCUPS", "kernel", "total", "status", "max err", "reps",
                   "fallback", "prep", "h2d", "d2h"):
        assert header in text
    for name in BACKENDS + (DATASET, "results/x[y].json"):
        assert name in text                          # whole, and markup printed as itself
    for figure in figures(doc):
        assert figure in text
    for status in ("ok", "mismatch", "unavailable", "peer"):
        assert status in text
    assert "202 µs" in text and "(146–8520)" in text   # the spread in the median's unit
    assert "12 of 3550 checked pairs differ [/]" in text


def test_a_table_that_fits_is_one_table():
    doc = pairhmm_doc()
    doc["runs"] = [r for r in doc["runs"] if r["backend"] == "opencl-warp"][:1]
    printer, console = terminal(200)
    printer.print_run(doc)
    assert "continued" not in fits(console, 200)


@pytest.mark.parametrize("width", WIDTHS)
def test_pivot_shows_every_value(width):
    doc = pairhmm_doc()
    pivot = make_pivot(doc["runs"], "gcups_kernel")
    printer, console = terminal(width)
    printer.print_pivot(pivot)
    text = fits(console, width)
    for name in BACKENDS + (DATASET,):
        assert name in text
    for value in set(pivot.cells.values()):
        assert value in text
    assert "1234" in text and "2818" in text and "mismatch" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_keeps_the_verdicts(width):
    doc = pairhmm_doc()
    comp = compare.compare(doc, candidate(doc))
    printer, console = terminal(width)
    printer.print_compare(comp, "base[1].json", "cand.json")
    text = fits(console, width)
    assert "verdict" in text and "change" in text and "base[1].json" in text
    for row in comp.rows:
        assert row.key[1] in text
        for word in row.verdict.split():
            assert word in text
    assert any(r.failed for r in comp.rows) and "FAIL" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_history_keeps_names_and_figures(width, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = pairhmm_doc()
    paths = []
    for i, d in enumerate((doc, candidate(doc))):
        p = tmp_path / "results" / f"run[{i}].json"
        p.parent.mkdir(exist_ok=True)
        p.write_text(json.dumps(d))
        paths.append(str(p.relative_to(tmp_path)))
    hist = history.load_history(paths)
    printer, console = terminal(width)
    printer.print_history(hist)
    text = fits(console, width)
    for header in ("last", "change", "total", "changed", "trend"):
        assert header in text
    for name in BACKENDS + (DATASET,) + tuple(paths):
        assert name in text
    assert report.fmt_number(1234.5, 4) in text and "2818" in text   # last kernel GCUPS


@pytest.mark.parametrize("width", WIDTHS)
def test_scaling_table_and_retried_shards(width):
    doc = cluster_doc()
    printer, console = terminal(width)
    printer.print_run(doc, None, of_document(doc))
    text = fits(console, width)
    assert "efficiency" in text and "GCUPS" in text and "0.9" in text
    assert f"{LONG} x4" in text and "288" in text and "360" in text
    assert "re-ran on" in text and "worker-1 (node[2])" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_listings_wrap_free_text_and_keep_status(width):
    t = Listing("backends", [Column("name", key=True), Column("api"), Column("family"),
                             Column("available", wrap=True, priority=0),
                             Column("limits", priority=3)])
    reason = "no: pycuda not installed (pip install pycuda) " * 3
    for name in BACKENDS:
        t.add(name, "cuda", "inter-task", report.Styled(reason.strip(), "yellow"),
              "max_pairs=1000000, max_len=4096")
    printer, console = terminal(width)
    printer.print_listing(t)
    text = fits(console, width)
    for name in BACKENDS:
        assert name in text
    assert "available" in text and "pycuda" in text and "max_pairs=1000000," in text


def test_markdown_csv_json_html_carry_the_same_figures(tmp_path):
    doc = pairhmm_doc()
    md = io.StringIO()
    MarkdownPrinter(md).print_run(doc)
    for name in (LONG, BOLD):
        assert f"| {name} |" in md.getvalue()
    assert "| b[/]x |" in md.getvalue() and "1.23e+03" in md.getvalue()

    out = io.StringIO()
    CsvPrinter(out).print_run(doc)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["backend"] for r in rows[:len(BACKENDS)]] == list(BACKENDS)
    assert float(rows[0]["gcups_kernel"]) == 1234.5 and rows[2]["status"] == "mismatch"

    out = io.StringIO()
    with JsonPrinter(out) as p:
        p.print_compare(compare.compare(doc, candidate(doc)))
    got = json.loads(out.getvalue())
    assert got["failed"] and {r["key"][1] for r in got["rows"]} == set(BACKENDS)

    page = tmp_path / "page.html"
    with HtmlPrinter(str(page)) as p:
        p.print_run(doc, "x<y>.json")
    html = page.read_text()
    assert "x&lt;y&gt;.json" in html and "b[/]x" in html and LONG in html


def test_multiplex_forwards_to_every_printer():
    doc = pairhmm_doc()
    md, js = io.StringIO(), io.StringIO()
    printer, console = terminal(80)
    with Multiplex([printer, MarkdownPrinter(md), JsonPrinter(js)]) as out:
        out.print_run(doc)
    assert LONG in console.export_text() and LONG in md.getvalue()
    assert json.loads(js.getvalue())["runs"][0]["backend"] == LONG


def test_registry_names_the_formats():
    assert set(report.format_names()) >= {"table", "markdown", "csv", "json", "html"}
    assert isinstance(report.get_printer("csv", io.StringIO()), CsvPrinter)
    from hmmbench.errors import UserError
    with pytest.raises(UserError, match="unknown format"):
        report.get_printer("yaml")


@pytest.mark.parametrize("width", WIDTHS)
def test_piped_report_honours_columns(width, tmp_path, monkeypatch, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(pairhmm_doc()))
    monkeypatch.setenv("COLUMNS", str(width))
    assert cli.main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= width
    assert LONG in text and MARKUP in text and "unavailable" in text
    assert cli.main(["report", str(path), "--pivot", "gcups_total"]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= width
    assert "987.6" in text and "1517" in text and LONG in text


@pytest.mark.parametrize("width", WIDTHS)
def test_live_lines_keep_names(width):
    from hmmbench.report import PlainProgress, RichProgress
    from hmmbench.runner import RunRecord
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    progress = RichProgress(console)
    progress.start(2)
    for backend in (LONG, MARKUP):
        progress.begin(DATASET, backend)
        progress.repeat(1)
        progress.end(RunRecord(dataset=DATASET, dataset_sha256="x", pairs=1, cells=1,
                               backend=backend, api="opencl", family="inter",
                               precision="float32", status="unavailable",
                               reason="pyopencl not installed [/]"))
    progress.stop()
    text = fits(console, width)
    assert LONG in text and MARKUP in text and DATASET in text
    assert "pyopencl not installed [/]" in text
    buf = io.StringIO()
    plain = TerminalPrinter(Console(file=buf, width=width)).progress()   # a log, not a tty
    assert isinstance(plain, PlainProgress)
    plain.start(1)
    plain.end(RunRecord(dataset=DATASET, dataset_sha256="x", pairs=1, cells=1, backend=BOLD,
                        api="numpy", family="x", precision="float32", status="ok"))
    assert f"{DATASET} [original] {BOLD}: ok" in buf.getvalue()


def test_compare_and_history_pick_a_printer(tmp_path, capsys):
    doc = pairhmm_doc()
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(json.dumps(doc))
    cand.write_text(json.dumps(candidate(doc)))
    assert cli.main(["compare", str(base), str(cand), "--format", "json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["failed"] and LONG in {r["key"][1] for r in got["rows"]}
    assert cli.main(["compare", str(base), str(cand), "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert f"| {LONG} |" in md and "| verdict |" in md and "FAIL" in md
    assert cli.main(["history", str(base), str(cand), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert ["1m", LONG, "original", "1,2"] == rows[rows.index([]) + 2][:4]


def test_a_name_wider_than_the_console_breaks_at_its_separators():
    name = "cuda-subwarp-regcap[hi=768,max_regs=0,exp_every=24,exp_shift=on,code_window=off]"
    doc = pairhmm_doc()
    doc["runs"][0]["backend"] = name
    printer, console = terminal(80)
    printer.print_run(doc)
    text = fits(console, 80)
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "cuda-subwarp-regcap[" in line)
    first_cells = [line.split("│")[1].strip() for line in lines[at:at + 2]]
    assert first_cells[0].endswith(",")                        # broken after a comma
    assert "".join(first_cells) == name                        # nothing of it lost
    assert report.terminal_printer.break_name(name, 48).splitlines() == [
        "cuda-subwarp-regcap[hi=768,max_regs=0,", "exp_every=24,exp_shift=on,code_window=off]"]


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_summary_through_any_printer(fmt, tmp_path, monkeypatch, capsys):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "step.json").write_text(json.dumps(pairhmm_doc()))
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["report", "--summary", str(tmp_path), "--format", fmt]) == 0
    text = capsys.readouterr().out
    assert LONG in text and "1234" in text and "987.6" in text
    if fmt == "table":
        assert max(len(line) for line in text.splitlines()) <= 80
        assert "gpu/step.json" in text and "Kernel GCUPS" in text
