"""What the runner shows while it works: plain lines for logs, a rich bar for terminals."""
from __future__ import annotations

import sys

from ..runner import Progress, RunRecord
from .formats import STATUS_STYLE, fmt_seconds
from .rows import cell_label


class PlainProgress(Progress):
    """A line per finished run (for logs and pipes)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.n, self.total = 0, 0

    def start(self, n_cells: int) -> None:
        # the count restarts per benchmark (a scaling study runs one per worker count)
        self.n, self.total = 0, n_cells

    def note(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def end(self, record: RunRecord) -> None:
        self.n += 1
        tm = record.timing_s.get("total")
        extra = f" total {fmt_seconds(tm)} x{record.repeats}" if tm is not None else ""
        gc = f" {record.gcups_kernel:.3g} GCUPS(kernel)" if record.gcups_kernel else ""
        why = f" ({record.reason})" if record.reason and record.status != "ok" else ""
        print(f"[{self.n}/{self.total}] {cell_label(record)} {record.backend}: "
              f"{record.status}"
              f"{extra}{gc}{why}", file=self.stream, flush=True)


class RichProgress(Progress):
    """A live progress bar on stderr: dataset x backend cells, repeat count of the current one."""

    def __init__(self, console=None):
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as _P, TextColumn,
                                   TimeElapsedColumn)
        self.console = console or Console(stderr=True)
        self._p = _P(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                     TimeElapsedColumn(), console=self.console, transient=True)
        self._task = None
        self._label = ""

    def start(self, n_cells: int) -> None:
        self._p.start()
        self._task = self._p.add_task("starting", total=n_cells)

    def note(self, text: str) -> None:
        from rich.text import Text
        self._p.console.print(Text(text, style="dim"), highlight=False)

    def begin(self, dataset: str, backend: str) -> None:
        from rich.markup import escape
        self._label = escape(f"{dataset} × {backend}")  # the description is rendered as markup
        self._p.update(self._task, description=f"{self._label} (warm-up)")

    def repeat(self, n: int) -> None:
        self._p.update(self._task, description=f"{self._label} (repeat {n})")

    def end(self, record: RunRecord) -> None:
        from rich.text import Text
        # Text, not markup: dataset names may be paths with brackets.
        line = Text(f"{cell_label(record)} × "
                    f"{record.backend}: ")
        line.append(record.status, style=STATUS_STYLE.get(record.status, ""))
        if record.reason and record.status != "ok":
            line.append(f" ({record.reason})", style="dim")
        self._p.console.print(line, highlight=False)
        self._p.advance(self._task)

    def stop(self) -> None:
        self._p.stop()


def make_progress(stream=None) -> Progress:
    stream = stream or sys.stderr
    return RichProgress() if getattr(stream, "isatty", lambda: False)() else PlainProgress(stream)
