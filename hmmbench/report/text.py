"""Reports as text files: markdown tables (results/README.md style) and CSV."""
from __future__ import annotations

from .rows import COLUMNS, by_dataset, row_cells, runs_and_doc, table_title
from .terminal import SWEEP_COLUMNS, SWEEP_TITLE, header_line, notes, sweep_cells, sweeps


def markdown(doc_or_runs) -> str:
    """The report as Markdown (for results/README.md): a header line, then a table and notes
    per dataset and chunking."""
    runs, doc = runs_and_doc(doc_or_runs)
    out = []
    if doc is not None:
        out.append(f"_{header_line(doc)}_\n")
    for key, group in by_dataset(runs).items():
        out.append(f"**{table_title(key, group)}**\n")
        out.append("| " + " | ".join(h for h, _ in COLUMNS) + " |")
        out.append("|" + "|".join("---:" if right else "---" for _, right in COLUMNS) + "|")
        for r in group:
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |")
        for backend, status, text in notes(group):
            out.append(f"- {backend} [{status}]: {text}")
        out.append("")
    summary = sweeps(runs)
    if summary:
        out.append(f"**{SWEEP_TITLE}**\n")
        out.append("| " + " | ".join(h for h, _ in SWEEP_COLUMNS) + " |")
        out.append("|" + "|".join("---:" if right else "---" for _, right in SWEEP_COLUMNS) + "|")
        out.extend("| " + " | ".join(sweep_cells(x)) + " |" for x in summary)
        out.append("")
    return "\n".join(out)


def csv_text(doc_or_runs) -> str:
    """One row per run with raw numbers (seconds, GCUPS), for spreadsheets and plots."""
    import csv
    import io
    runs, _ = runs_and_doc(doc_or_runs)
    fields = ["dataset", "chunking", "backend", "api", "family", "precision", "device", "pairs",
              "cells", *(f"{s}_s" for s in ("prep", "h2d", "kernel", "d2h", "total")),
              "gcups_kernel", "gcups_total", "speedup_vs_reference", "max_abs_err", "n_checked",
              "n_over_tol", "n_fallback", "repeats", "throttled", "status", "reason",
              "workload", "model", "model_length", "kind", "residues", "sampled"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in runs:
        row = {k: r.get(k) for k in fields if k in r}
        for s in ("prep", "h2d", "kernel", "d2h", "total"):
            row[f"{s}_s"] = (r.get("timing_s") or {}).get(s)
        row["throttled"] = bool((r.get("info") or {}).get("throttled"))
        w.writerow(row)
    return buf.getvalue()


#: Metrics a pivot can show, with their formatter.
