"""The CSV printer: raw numbers (seconds, GCUPS), one row per run, for spreadsheets and pandas."""
from __future__ import annotations

import csv

from .listing import Listing
from .printer import Printer
from .rows import runs_and_doc

#: The run rows' fields, in order (one header for every document printed).
RUN_FIELDS = ["dataset", "chunking", "backend", "api", "family", "precision", "device", "pairs",
              "cells", *(f"{s}_s" for s in ("prep", "h2d", "kernel", "d2h", "total")),
              "gcups_kernel", "gcups_total", "speedup_vs_reference", "max_abs_err", "n_checked",
              "n_over_tol", "n_fallback", "repeats", "throttled", "status", "reason",
              "workload", "model", "model_length", "kind", "residues", "sampled"]


def csv_text(doc_or_runs) -> str:
    """One row per run with raw numbers, a header first."""
    import io
    buf = io.StringIO()
    CsvPrinter(buf).print_run(doc_or_runs)
    return buf.getvalue()


class CsvPrinter(Printer):
    """Run documents as one table of raw numbers; other reports as their tables' text. Log
    lines are not data: they are left out."""

    name = "csv"

    def __init__(self, stream=None):
        super().__init__(stream)
        self._runs = None             # the run rows' writer, once its header is out
        self._tables = 0

    def print_log(self, text: str, style: str = "") -> None:
        pass

    def print_run(self, doc, path=None, scaling=None) -> None:
        runs, _ = runs_and_doc(doc)
        if self._runs is None:
            self._runs = csv.DictWriter(self.stream, fieldnames=RUN_FIELDS, lineterminator="\n")
            self._runs.writeheader()
        for r in runs:
            row = {k: r.get(k) for k in RUN_FIELDS if k in r}
            for s in ("prep", "h2d", "kernel", "d2h", "total"):
                row[f"{s}_s"] = (r.get("timing_s") or {}).get(s)
            row["throttled"] = bool((r.get("info") or {}).get("throttled"))
            self._runs.writerow(row)

    def print_listing(self, listing: Listing) -> None:
        if self._tables:                  # tables one after the other, a blank line between
            self.stream.write("\n")
        self._tables += 1
        w = csv.writer(self.stream, lineterminator="\n")
        w.writerow(listing.headers())
        w.writerows(listing.plain_rows())
