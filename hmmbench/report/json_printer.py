"""The JSON printer: every report as one JSON value on its stream (a document, a pivot, the
compare gate's rows...), for scripts; several reports make a list."""
from __future__ import annotations

import dataclasses
import json

from .listing import Listing
from .printer import Printer
from .rows import runs_and_doc


class JsonPrinter(Printer):
    """Collects the reports and writes them at :meth:`close`. Log lines are left out."""

    name = "json"

    def __init__(self, stream=None):
        super().__init__(stream)
        self.items: list = []

    def print_log(self, text: str, style: str = "") -> None:
        pass

    def print_listing(self, listing: Listing) -> None:
        self.items.append(listing.to_dict())

    def print_run(self, doc, path=None, scaling=None) -> None:
        runs, whole = runs_and_doc(doc)
        self.items.append(whole if whole is not None else {"runs": runs})

    def print_pivot(self, pivot) -> None:
        heads = pivot.heads + [pivot.label(c) for c in pivot.cols]
        self.items.append({"metric": pivot.metric, "by": pivot.by, "columns": heads,
                           "rows": [dict(zip(heads, pivot.row_cells(r))) for r in pivot.rows]})

    def print_compare(self, comparison, baseline_name="baseline", candidate_name="candidate"):
        self.items.append({"baseline": baseline_name, "candidate": candidate_name,
                           "max_slowdown": comparison.max_slowdown,
                           "stage": comparison.stage, "rounds": comparison.rounds,
                           "failed": comparison.failed,
                           "rows": [dataclasses.asdict(r) for r in comparison.rows]})

    def close(self) -> None:
        if not self.items:
            return
        value = self.items[0] if len(self.items) == 1 else self.items
        self.stream.write(json.dumps(value, indent=1, default=str) + "\n")
        self.items = []
