"""The results folder as tables: ``hmmbench report --summary results/`` (``results/SUMMARY.md``).

Every result file under ``<root>/<device folder>/*.json`` becomes one section: where and when it
ran (the devices, date and command line the file records), its run statuses, GCUPS pivot tables
(kernel and total; runs with a score kind: one table per backend, kinds as columns) and, where a
family ran in two APIs on the same data, the kernel-time ratio of the twins. The tables are
generated from the files alone, so they cannot drift from the data.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import report, results
from .errors import UserError

METRICS = (("gcups_kernel", "Kernel GCUPS"), ("gcups_total", "End-to-end (total) GCUPS"))


def result_files(root) -> list:
    """``<root>/<folder>/*.json``, folders and files in name order; ``runs/`` (where ``hmmbench
    run`` writes by default, never committed) is left out."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: --summary needs a results folder (<folder>/<device>/*.json)")
    files = sorted(p for p in root.glob("*/*.json")
                   if p.is_file() and p.parent.name != results.DEFAULT_DIR.name)
    if not files:
        raise UserError(f"{root}: no result files (<device folder>/*.json) under it")
    return files


def device_names(doc: dict) -> list:
    return list(dict.fromkeys(d.get("name", "?") for d in doc.get("devices", [])))


def status_line(runs: list) -> str:
    counts = Counter(r["status"] for r in runs)
    errors = [r["max_abs_err"] for r in runs if r["status"] == "ok"
              and isinstance(r.get("max_abs_err"), float)]
    text = ", ".join(f"{n} {status}" for status, n in counts.most_common())
    return text + (f"; worst checked error {max(errors):.2g}" if errors else "")


def twin_key(run: dict) -> tuple:
    """(family, api) of a backend that may have a twin in another API: its name without the
    API's own token (cuda-warp / opencl-warp -> warp; profile-cuda-task -> profile-task)."""
    api = run.get("api", "")
    parts = run["backend"].split("-")
    return "-".join(p for p in parts if p != api), api


def cell_label(run: dict) -> str:
    """The data a run timed: dataset, model, kind, chunking (those it has)."""
    return " ".join(str(run[k]) for k in ("dataset", "model", "kind", "chunking")
                    if run.get(k) not in (None, ""))


def api_ratios(runs: list, float32_pass: bool = False) -> tuple:
    """Kernel time of each API over the first API's (in name order) per family and cell, for the
    families that ran ok in two APIs: ({family: {cell: ratio}}, cells, (numerator, denominator)).

    ``float32_pass`` leaves out the float64 fallback kernels (``info.fallback_seconds``): the
    float32 launches alone."""
    kernel, cells = {}, []
    for r in runs:
        if r.get("status") != "ok" or not (r.get("timing_s") or {}).get("kernel"):
            continue
        seconds = r["timing_s"]["kernel"]
        if float32_pass:
            seconds -= ((r.get("info") or {}).get("fallback_seconds") or {}).get("kernel", 0.0)
        family, api = twin_key(r)
        cell = cell_label(r)
        if cell not in cells:
            cells.append(cell)
        kernel[family, api, cell] = seconds
    apis = sorted({api for _, api, _ in kernel})
    if len(apis) < 2:
        return {}, [], ("", "")
    base, other = apis[0], apis[1]
    families = sorted({f for f, a, _ in kernel if a == base}
                      & {f for f, a, _ in kernel if a == other})
    table = {f: {c: kernel[f, other, c] / kernel[f, base, c] for c in cells
                 if (f, base, c) in kernel and (f, other, c) in kernel} for f in families}
    table = {f: row for f, row in table.items() if row}
    used = [c for c in cells if any(c in row for row in table.values())]
    return table, used, (other, base)


@dataclass
class FileSummary:
    """One result file's section: provenance, statuses, GCUPS pivots, twin ratios."""
    path: str                    # relative to the results folder
    folder: str
    devices: list
    created: str
    version: str
    sources: str                 # sha256 of the sources ("" not recorded)
    command: list
    statuses: str
    metrics: list                # [(title, [(backend or None, Pivot)])]
    ratios: dict                 # {family: {cell: ratio}}
    ratio_cells: list
    ratio_apis: tuple            # (numerator, denominator)


@dataclass
class Summary:
    """A results folder as data; a printer renders it (markdown: ``results/SUMMARY.md``)."""
    root: str
    files: list = field(default_factory=list)


def backend_pivots(runs: list, metric: str) -> list:
    """Runs with a score kind: one pivot per backend, its kinds as the columns."""
    out = []
    for backend in dict.fromkeys(r["backend"] for r in runs):
        p = report.make_pivot([r for r in runs if r["backend"] == backend], metric)
        p.labels = {c: c[len(backend) + 1:] if c.startswith(f"{backend} ") else c
                    for c in p.cols}
        out.append((backend, p))
    return out


def file_summary(path: Path, root: Path) -> FileSummary:
    doc = results.load(path)
    runs = doc["runs"]
    per_kind = any(r.get("kind") for r in runs)
    metrics = [(title, backend_pivots(runs, metric) if per_kind
                else [(None, report.make_pivot(runs, metric))]) for metric, title in METRICS]
    table, cells, apis = api_ratios(runs)
    return FileSummary(path.relative_to(root).as_posix(),
                       path.parent.relative_to(root).as_posix(), device_names(doc),
                       doc.get("created", "?"), str(doc.get("hmmbench_version", "?")),
                       doc.get("source_sha256") or "", list(doc.get("command", [])),
                       status_line(runs), metrics, table, cells, apis)


def build_summary(root) -> Summary:
    """Every result file under ``<root>/<device folder>/``, in name order."""
    root = Path(root)
    return Summary(root.name, [file_summary(p, root) for p in result_files(root)])


def summary_markdown(root) -> str:
    """The whole SUMMARY.md text for a results folder."""
    import io
    from .report.markdown_printer import MarkdownPrinter
    buf = io.StringIO()
    MarkdownPrinter(buf).print_summary(build_summary(root))
    return buf.getvalue()
