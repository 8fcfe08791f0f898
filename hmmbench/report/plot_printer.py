"""The plot printer: the runs of the documents printed to it as PNG charts (matplotlib,
:func:`.plots.plot_all`), drawn when the printer closes."""
from __future__ import annotations

from .printer import RunsOnly


class PlotPrinter(RunsOnly):
    """``path``: the GCUPS chart; the peak, stage and model-size charts go beside it.
    :attr:`written` lists the files drawn."""

    name = "plot"

    def __init__(self, path):
        super().__init__()
        self.path = path
        self.runs: list = []
        self.written: list = []

    def print_run(self, doc, path=None, scaling=None) -> None:
        from .rows import runs_and_doc
        self.runs += runs_and_doc(doc)[0]

    def close(self) -> None:
        from .plots import plot_all
        if self.runs:
            self.written = plot_all(self.runs, self.path)
            self.runs = []
