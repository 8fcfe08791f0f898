"""``hmmbench report FILES --html PAGE``: one self-contained HTML page of result files.

No scripts and nothing from the network: the charts are inline SVG drawn by :mod:`.svg`
from the numbers of :mod:`.figures`. The page holds, per result file: its provenance,
a summary table and charts per cell (GCUPS per backend, stage breakdown as stacked bars), the
peak curves over L of equal-length sets, CUDA-vs-OpenCL twin ratios and model-size curves; then
the cross-check status of every row of every file.
"""
from __future__ import annotations

from collections import Counter
from html import escape
from pathlib import Path

from . import svg
from .figures import api_ratios, model_size_curves, peak_curves, stage_groups
from .formats import fmt_error
from .rows import (COLUMNS, by_dataset, cell_label, header_line, notes, row_cells,
                          table_title)
from ..results import CELL_SIZE

STAGE_COLOURS = {"prep": "#8c8c8c", "h2d": "#4c72b0", "kernel": "#55a868", "d2h": "#c44e52",
                 "other": "#dddddd"}
STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
table { border-collapse: collapse; margin: 0.4em 0 0.8em; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.st-ok { color: #1a7f37; } .st-mismatch, .st-error { color: #b00; font-weight: bold; }
.st-unavailable { color: #9a6700; } .st-unchecked { color: #8250df; } .st-peer { color: #0969da; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
details > summary { cursor: pointer; font-weight: bold; font-size: 1.1em; margin: 0.6em 0; }
.note { color: #555; font-size: 12px; } code { font-size: 12px; }
"""


def _table(head: list, rows: list, numeric=()) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{c}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</table>"


def _status(s: str) -> str:
    return f'<span class="st-{escape(s)}">{escape(s)}</span>'


def provenance(path: str, doc: dict) -> str:
    host = doc.get("host") or {}
    pk = host.get("packages") or {}
    rows = [("file", escape(path)), ("created", escape(doc.get("created", "?"))),
            ("hmmbench", escape(str(doc.get("hmmbench_version", "?")))),
            ("sources sha256", escape(doc.get("source_sha256") or "not recorded")),
            ("git commit", escape(doc.get("source_commit") or "not recorded")),
            ("host", escape(f"{host.get('cpu', '?')} ({host.get('cpu_count', '?')} CPUs), "
                            f"{host.get('os', '?')}, Python {host.get('python', '?')}")),
            ("packages", escape(", ".join(f"{k} {v}" for k, v in pk.items() if v))),
            ("devices", "<br>".join(escape(f"{d.get('api')}: {d.get('name')}"
                                           + "".join(f", {k} {v}" for k, v in d.items()
                                                     if k in ("compute_capability", "memory_gib")
                                                     or "driver" in k))
                                    for d in doc.get("devices", []))),
            ("command", f"<code>{escape(' '.join(doc.get('command', [])))}</code>")]
    return _table(["", ""], rows)


def cell_section(key: tuple, runs: list) -> str:
    """One cell: the summary table, GCUPS per backend and the stage breakdown."""
    heads = [h for h, _ in COLUMNS]
    numeric = {i for i, (_, right) in enumerate(COLUMNS) if right}
    rows = []
    for r in runs:
        cells = [escape(c) for c in row_cells(r)]
        cells[-1] = _status(r["status"])
        rows.append(cells)
    parts = [f"<h3>{escape(table_title(key, runs))}</h3>", _table(heads, rows, numeric)]
    note_lines = notes(runs)
    if note_lines:
        parts.append("<ul class='note'>" + "".join(
            f"<li><b>{escape(b)}</b> [{escape(s)}]: {escape(t)}</li>" for b, s, t in note_lines)
            + "</ul>")
    backends = [r["backend"] for r in runs]
    bars = svg.hbars(backends, {"kernel": [r.get("gcups_kernel") for r in runs],
                                "end-to-end": [r.get("gcups_total") for r in runs]},
                     "GCUPS (giga cell updates per second, log scale)", "GCUPS per backend")
    stages = [(name, st) for group in stage_groups(runs).values() for name, st in group]
    stacked = svg.stacked_hbars([(n, {k: v * 1e3 for k, v in st.items()}) for n, st in stages],
                                STAGE_COLOURS, "time per pass, median (ms)",
                                "stage breakdown: prep / h2d / kernel / d2h / other")
    charts = [c for c in (bars, stacked) if c]
    if charts:
        parts.append("<div class='charts'>" + "".join(charts) + "</div>")
    return "".join(parts)


def curves_section(title: str, curves: dict, xlabel: str) -> str:
    out = []
    for series, lines in curves.items():
        out.append(svg.lines({n: [(x, k) for x, k, _ in ps] for n, ps in lines.items()},
                             xlabel, "GCUPS (solid: kernel, dashed: end-to-end)",
                             f"{title}: {series}",
                             dashed={n: [(x, t) for x, _, t in ps] for n, ps in lines.items()}))
    return "<div class='charts'>" + "".join(out) + "</div>" if out else ""


def ratios_section(runs: list) -> str:
    rows = api_ratios(runs)
    if not rows:
        return ""
    table = [[escape(cell), escape(twin),
              f"{k['cuda']:.4g}", f"{k['opencl']:.4g}", f"{k['cuda'] / k['opencl']:.2f}",
              "-" if not (t.get("cuda") and t.get("opencl")) else
              f"{t['cuda'] / t['opencl']:.2f}"] for cell, twin, k, t in rows]
    labels = [f"{twin} · {cell}" for cell, twin, _, _ in rows]
    chart = svg.hbars(labels, {"kernel": [k["cuda"] / k["opencl"] for _, _, k, _ in rows]},
                      "CUDA / OpenCL kernel GCUPS (ratio, log scale; 1 = equal)",
                      "CUDA vs OpenCL twins")
    return ("<h3>CUDA vs OpenCL twins</h3>"
            + _table(["cell", "twin", "CUDA kernel GCUPS", "OpenCL kernel GCUPS",
                      "kernel ratio", "end-to-end ratio"], table, {2, 3, 4, 5}) + chart)


def file_section(i: int, path: str, doc: dict, open_: bool) -> str:
    runs = doc["runs"]
    counts = Counter(r["status"] for r in runs)
    summary = ", ".join(f"{n} {s}" for s, n in counts.most_common())
    parts = [f"<details id='file{i}'{' open' if open_ else ''}><summary>{escape(path)} "
             f"<span class='note'>({len(runs)} runs: {escape(summary)})</span></summary>",
             f"<p class='note'>{escape(header_line(doc))}</p>", provenance(path, doc)]
    parts += [cell_section(key, group) for key, group in by_dataset(runs).items()]
    peak = curves_section("peak curve", peak_curves(runs),
                          "set length L (bases; haplotype length of every pair)")
    if peak:
        parts.append("<h3>Peak curves over L (equal-length sets)</h3>" + peak)
    parts.append(ratios_section(runs))
    size = curves_section("model-size curve", model_size_curves(runs),
                          f"{CELL_SIZE[1]}: model length (match states)")
    if size:
        parts.append("<h3>Model-size curves</h3>" + size)
    parts.append("</details>")
    return "".join(parts)


def status_section(docs: list) -> str:
    """Rows that are not ok first (always shown), then every row (folded when long)."""
    rows, flagged = [], []
    for path, doc in docs:
        for r in doc["runs"]:
            row = [escape(path), escape(cell_label(r)), escape(r["backend"]),
                   escape(r.get("device") or ""), _status(r["status"]),
                   escape(fmt_error(r.get("max_abs_err")) if r.get("n_checked") else "-"),
                   str(r.get("n_checked", 0)), escape(r.get("reason") or "")]
            rows.append(row)
            if r["status"] != "ok":
                flagged.append(row)
    head = ["file", "cell", "backend", "device", "status", "max err", "checked", "reason"]
    out = [f"<p>{len(flagged)} of {len(rows)} rows are not <span class='st-ok'>ok</span>"
           + (":</p>" + _table(head, flagged, {5, 6}) if flagged else ".</p>")]
    out.append(f"<details{' open' if len(rows) <= 150 else ''}><summary>every row "
               f"({len(rows)})</summary>" + _table(head, rows, {5, 6}) + "</details>")
    return "".join(out)


def html_page(docs: list, title: str = "hmmbench results") -> str:
    """The page for [(path, document), ...]."""
    counts = Counter(r["status"] for _, d in docs for r in d["runs"])
    index = _table(["#", "file", "created", "runs", "statuses", "devices"], [
        [str(i + 1), f"<a href='#file{i}'>{escape(p)}</a>", escape(d.get("created", "?")),
         str(len(d["runs"])), escape(", ".join(f"{n} {s}" for s, n in
                                               Counter(r["status"] for r in d["runs"]).items())),
         escape(", ".join(str(x.get("name")) for x in d.get("devices", [])))]
        for i, (p, d) in enumerate(docs)], {0, 3})
    body = [f"<h1>{escape(title)}</h1>",
            f"<p>{len(docs)} result file(s), {sum(counts.values())} runs: "
            + ", ".join(f"{_status(s)} {n}" for s, n in counts.most_common()) + ".</p>",
            "<p class='note'>GCUPS: giga cell updates per second (kernel: the kernel stage "
            "alone; end-to-end: the whole call). Stages: prep (host layout), h2d, kernel, d2h, "
            "other (the rest of the pass's wall time). Every figure is the median of the "
            "timed passes; the cross-check compares every value with the float64 reference."
            "</p>",
            "<h2>Files</h2>", index,
            "<h2>Results per file</h2>",
            *(file_section(i, p, d, open_=len(docs) <= 3) for i, (p, d) in enumerate(docs)),
            "<h2>Cross-check status of every row</h2>", status_section(docs)]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def write_html(docs: list, path, title: str = "hmmbench results") -> Path:
    import os
    from ..results import atomic_write_text
    atomic_write_text(path, html_page(docs, title))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)     # a page to share, not the temp file's private mode
    return Path(path)
