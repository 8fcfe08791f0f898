"""The markdown printer: reports as GitHub tables (``results/README.md``, ``results/SUMMARY.md``,
pull-request comments). Markdown has no width: tables are never split."""
from __future__ import annotations

import shlex

from .listing import Listing
from .printer import Printer
from .rows import COLUMNS, by_dataset, header_line, notes, row_cells, runs_and_doc, table_title
from .sweeps import SWEEP_COLUMNS, SWEEP_TITLE, sweep_cells, sweeps


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(headers: list, right: list, rows: list) -> list:
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    return out + ["| " + " | ".join(row) + " |" for row in rows]


def markdown(doc_or_runs) -> str:
    """The run report: a header line, then a table and notes per dataset and chunking, and the
    model sweeps."""
    runs, doc = runs_and_doc(doc_or_runs)
    out = []
    if doc is not None:
        out.append(f"_{header_line(doc)}_\n")
    for key, group in by_dataset(runs).items():
        out.append(f"**{table_title(key, group)}**\n")
        out += _table([h for h, _ in COLUMNS], [r for _, r in COLUMNS],
                      [[c.replace("|", "\\|") for c in row_cells(r)] for r in group])
        out += [f"- {backend} [{status}]: {text}" for backend, status, text in notes(group)]
        out.append("")
    summary = sweeps(runs)
    if summary:
        out.append(f"**{SWEEP_TITLE}**\n")
        out += _table([h for h, _ in SWEEP_COLUMNS], [r for _, r in SWEEP_COLUMNS],
                      [sweep_cells(x) for x in summary])
        out.append("")
    return "\n".join(out)


def pivot_text(p) -> str:
    """A :class:`~.pivot.Pivot` as a markdown table."""
    return "\n".join(_table(p.heads + [p.label(c) for c in p.cols],
                            [False] * len(p.heads) + [True] * len(p.cols),
                            [p.row_cells(row) for row in p.rows])) + "\n"


def pivot_markdown(runs, metric: str, by: str = "backend") -> str:
    from .pivot import make_pivot
    return pivot_text(make_pivot(runs, metric, by))


def ratio_markdown(table: dict, cells: list) -> str:
    """Twin kernel-time ratios: a row per family, a column per cell."""
    return "\n".join(_table(["family"] + cells, [False] + [True] * len(cells), [
        [family] + [f"{row[c]:.2f}" if c in row else "-" for c in cells]
        for family, row in table.items()])) + "\n"


SUMMARY_INTRO = (
    "Generated from the result files by `hmmbench report --summary {root}/` "
    "(do not edit: `tests/report/test_summary.py` regenerates it). GCUPS = cells / seconds; "
    "kernel = the kernels alone (device events), total = the whole call (layout, copies, "
    "kernels). A cell that did not run ok shows its status; whole-pipeline peers are "
    "marked (peer). See `README.md` here for what each study measured and why.\n")


def summary_text(summary) -> str:
    """A :class:`hmmbench.summary.Summary` as ``results/SUMMARY.md``."""
    out = ["# Result tables\n", SUMMARY_INTRO.format(root=summary.root)]
    folder = None
    for f in summary.files:
        if f.folder != folder:
            folder = f.folder
            out.append(f"## `{folder}/`\n")
        parts = [f"### `{f.path}`\n",
                 f"- devices: {'; '.join(f.devices) or '-'}",
                 f"- created: {f.created}, hmmbench {f.version}"
                 + (f", sources {f.sources[:12]}" if f.sources else ""),
                 f"- command: `{shlex.join(f.command)}`",
                 f"- runs: {f.statuses}\n"]
        for title, pivots in f.metrics:
            parts.append(f"{title}:\n")
            parts += [pivot_text(p) if backend is None else f"`{backend}`:\n\n" + pivot_text(p)
                      for backend, p in pivots]
        if f.ratios:
            num, den = f.ratio_apis
            parts += [f"Kernel time, {num} / {den} twin:\n", ratio_markdown(f.ratios,
                                                                            f.ratio_cells)]
        out.append("\n".join(parts))
    return "\n".join(out)


class MarkdownPrinter(Printer):
    """Reports as markdown on ``stream``."""

    name = "markdown"

    def __init__(self, stream=None):
        super().__init__(stream)
        self._runs_printed = 0

    def _write(self, text: str) -> None:
        self.stream.write(text)

    def print_log(self, text: str, style: str = "") -> None:
        self._write(f"{text}\n\n")

    def print_listing(self, listing: Listing) -> None:
        lines = [f"**{listing.title}**\n"] if listing.title else []
        lines += _table([_cell(c.header) for c in listing.columns],
                        [c.right for c in listing.columns],
                        [[_cell(x) for x in row] for row in listing.plain_rows()])
        lines += [f"- {''.join(str(c) for c in line).strip()}" for line in listing.notes]
        self._write("\n".join(lines) + "\n\n")

    def print_run(self, doc, path=None, scaling=None) -> None:
        if self._runs_printed:            # documents one after the other, a line between
            self._write("\n")
        self._runs_printed += 1
        self._write(markdown(doc))
        if scaling:
            self.print_scaling(scaling)

    def print_pivot(self, pivot) -> None:
        self._write(pivot_text(pivot))

    def print_summary(self, summary) -> None:
        self._write(summary_text(summary))
