"""The results folder as tables: ``hmmbench report --summary results/`` (``results/SUMMARY.md``).

Every result file under ``<root>/<device folder>/*.json`` becomes one section: where and when it
ran (the devices, date and command line the file records), its run statuses, GCUPS pivot tables
(kernel and total; runs with a score kind: one table per backend, kinds as columns) and, where a
family ran in two APIs on the same data, the kernel-time ratio of the twins. The tables are
generated from the files alone, so they cannot drift from the data.
"""
from __future__ import annotations

import shlex
from collections import Counter
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


def ratio_markdown(table: dict, cells: list) -> str:
    out = ["| family | " + " | ".join(cells) + " |", "|---|" + "---:|" * len(cells)]
    out += [f"| {family} | " + " | ".join(f"{row[c]:.2f}" if c in row else "-" for c in cells)
            + " |" for family, row in table.items()]
    return "\n".join(out) + "\n"


def backend_tables(runs: list, metric: str) -> list:
    """Runs with a score kind: one pivot per backend, its kinds as the columns."""
    out = []
    for backend in dict.fromkeys(r["backend"] for r in runs):
        lines = report.pivot_markdown([r for r in runs if r["backend"] == backend],
                                      metric).split("\n")
        lines[0] = lines[0].replace(f"| {backend} ", "| ")
        out.append(f"`{backend}`:\n\n" + "\n".join(lines))
    return out


def file_section(path: Path, root: Path) -> str:
    doc = results.load(path)
    runs = doc["runs"]
    parts = [f"### `{path.relative_to(root).as_posix()}`\n",
             f"- devices: {'; '.join(device_names(doc)) or '-'}",
             f"- created: {doc.get('created', '?')}, hmmbench {doc.get('hmmbench_version', '?')}"
             + (f", sources {doc['source_sha256'][:12]}" if doc.get("source_sha256") else ""),
             f"- command: `{shlex.join(doc.get('command', []))}`",
             f"- runs: {status_line(runs)}\n"]
    per_kind = any(r.get("kind") for r in runs)
    for metric, title in METRICS:
        parts.append(f"{title}:\n")
        parts += backend_tables(runs, metric) if per_kind else [report.pivot_markdown(runs, metric)]
    table, cells, (num, den) = api_ratios(runs)
    if table:
        parts += [f"Kernel time, {num} / {den} twin:\n", ratio_markdown(table, cells)]
    return "\n".join(parts)


def summary_markdown(root) -> str:
    """The whole SUMMARY.md text for a results folder."""
    root = Path(root)
    files = result_files(root)
    out = ["# Result tables\n",
           f"Generated from the result files by `hmmbench report --summary {root.name}/` "
           "(do not edit: `tests/test_summary.py` regenerates it). GCUPS = cells / seconds; "
           "kernel = the kernels alone (device events), total = the whole call (layout, copies, "
           "kernels). A cell that did not run ok shows its status; whole-pipeline peers are "
           "marked (peer). See `README.md` here for what each study measured and why.\n"]
    folder = None
    for path in files:
        if path.parent != folder:
            folder = path.parent
            out.append(f"## `{folder.relative_to(root).as_posix()}/`\n")
        out.append(file_section(path, root))
    return "\n".join(out)
