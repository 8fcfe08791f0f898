"""The printer interface (nvbench's ``printer_base`` and ``printer_multiplex`` are the model).

Every report goes through a :class:`Printer`: a stored or fresh result document
(:meth:`~Printer.print_run`), one metric pivoted (:meth:`~Printer.print_pivot`), the regression
gate's verdicts (:meth:`~Printer.print_compare`), trends across files
(:meth:`~Printer.print_history`), a results folder's summary (:meth:`~Printer.print_summary`), a
cluster's scaling table (:meth:`~Printer.print_scaling`), catalogs such as ``hmmbench list``
(:meth:`~Printer.print_listing`) and log lines (:meth:`~Printer.print_log`). The content arrives as
data; by default a printer turns it into :class:`~hmmbench.report.listing.Listing` tables and
prints those, so a new output format needs :meth:`~Printer.print_listing` and
:meth:`~Printer.print_log` only, and overrides the rest where its form differs (markdown's run
report, CSV's raw numbers, JSON's documents).

:class:`Multiplex` forwards every call to several printers (the terminal and an ``--html`` page
at once). The registry ``--format NAME`` picks from is :mod:`.registry`.
"""
from __future__ import annotations

import sys
from typing import Optional

from . import tables
from .rows import header_line, runs_and_doc


class Printer:
    """One output. Subclasses print :class:`Listing` tables and log lines; ``close`` finishes
    outputs written at the end (an HTML page, plots)."""

    #: the --format name
    name = ""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stdout

    # what every printer needs
    def print_listing(self, listing) -> None:
        raise NotImplementedError

    def print_log(self, text: str, style: str = "") -> None:
        """A line of running text (notes, a file's name, PASS/FAIL)."""
        raise NotImplementedError

    # the reports, as listings unless a printer has its own form
    def print_run(self, doc, path: Optional[str] = None, scaling=None) -> None:
        """A result document (or a list of runs): the file's name and provenance, a table and
        notes per cell, model sweeps, the cluster's scaling (``scaling``:
        :class:`hmmbench.cluster.scaling.Scaling`) and what an unfinished run left out."""
        runs, doc = runs_and_doc(doc)
        if path:
            self.print_log(str(path), "bold")
        if doc is not None:
            self.print_log(header_line(doc), "dim")
        for listing in tables.run_listings(runs):
            self.print_listing(listing)
        if scaling:
            self.print_scaling(scaling)
        if path and doc is not None and doc.get("not_run"):
            self.print_log(f"{path}: an unfinished run: {len(doc['not_run'])} cells not run "
                           f"(hmmbench run with the same options and --resume {path} runs them)",
                           "yellow")

    def print_pivot(self, pivot) -> None:
        """One metric: :class:`hmmbench.report.pivot.Pivot`."""
        self.print_listing(tables.pivot_listing(pivot))

    def print_compare(self, comparison, baseline_name: str = "baseline",
                      candidate_name: str = "candidate") -> None:
        listing = tables.compare_listing(comparison, baseline_name, candidate_name)
        self.print_listing(listing)

    def print_history(self, history, min_points: int = 2) -> None:
        for listing in tables.history_listings(history, min_points):
            self.print_listing(listing)

    def print_summary(self, summary) -> None:
        """A results folder (:class:`hmmbench.summary.Summary`): per file its provenance lines,
        GCUPS pivots and twin ratios."""
        for f in summary.files:
            self.print_log(f.path, "bold")
            self.print_log(f"devices: {'; '.join(f.devices) or '-'}; created {f.created}, "
                           f"hmmbench {f.version}; runs: {f.statuses}", "dim")
            for title, pivots in f.metrics:
                for backend, p in pivots:
                    p.title = f"{title}: {backend}" if backend else title
                    self.print_pivot(p)
            if f.ratios:
                self.print_listing(tables.ratio_listing(f.ratios, f.ratio_cells, f.ratio_apis))

    def print_scaling(self, scaling) -> None:
        listing = tables.scaling_listing(scaling)
        if listing.rows:
            self.print_listing(listing)
        else:                      # shards that re-ran, in a run without a scaling study
            for line in listing.notes:
                self.print_log("".join(str(c) for c in line))

    def progress(self):
        """What a run shows while it works (a :class:`hmmbench.runner.Progress`): a line per
        finished cell on stderr."""
        from .progress import PlainProgress
        return PlainProgress(sys.stderr)

    def close(self) -> None:
        """Called once after the last report."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()


class RunsOnly(Printer):
    """A printer of result documents alone, rendered when it closes (a page, charts): the log
    lines and tables of other reports are left out."""

    def print_log(self, text: str, style: str = "") -> None:
        pass

    def print_listing(self, listing) -> None:
        pass


class Multiplex(Printer):
    """Forwards every call to each of its printers, in order."""

    name = "multiplex"

    def __init__(self, printers: list):
        super().__init__()
        self.printers = list(printers)

    def _each(self, method: str, *args, **kw) -> None:
        for p in self.printers:
            getattr(p, method)(*args, **kw)

    def print_listing(self, listing) -> None:
        self._each("print_listing", listing)

    def print_log(self, text: str, style: str = "") -> None:
        self._each("print_log", text, style)

    def print_run(self, doc, path=None, scaling=None) -> None:
        self._each("print_run", doc, path, scaling)

    def print_pivot(self, pivot) -> None:
        self._each("print_pivot", pivot)

    def print_compare(self, comparison, baseline_name="baseline", candidate_name="candidate"):
        self._each("print_compare", comparison, baseline_name, candidate_name)

    def print_history(self, history, min_points: int = 2) -> None:
        self._each("print_history", history, min_points)

    def print_summary(self, summary) -> None:
        self._each("print_summary", summary)

    def print_scaling(self, scaling) -> None:
        self._each("print_scaling", scaling)

    def close(self) -> None:
        self._each("close")
