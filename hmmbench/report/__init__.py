"""Printing, one module per printer (nvbench style): rich tables of result documents and progress
while running.

Everything here takes plain run dicts (as stored in result files, or ``RunRecord.to_dict()``), so
a stored result re-renders exactly like a fresh one.

:mod:`.formats` (numbers, times, errors), :mod:`.rows` (cells and row contents), :mod:`.terminal`
(rich tables, notes, sweeps), :mod:`.text` (markdown, CSV), :mod:`.pivot` (one metric, cells x
backends or any axis), :mod:`.progress` (while running). Plots and the HTML page are
:mod:`hmmbench.plots` and :mod:`hmmbench.html_report`.
"""
from .formats import (STATUS_STYLE, THROTTLE_MARK, fmt_count, fmt_error, fmt_number, fmt_seconds,
                      fmt_spread)
from .pivot import PIVOT_METRICS, axis_value, pivot, pivot_layout, pivot_markdown, pivot_table
from .progress import PlainProgress, RichProgress, make_progress
from .rows import COLUMNS, by_dataset, cell_label, group_key, row_cells, table_title
from .terminal import header_line, notes, render, run_table, sweep_cells, sweeps
from .text import csv_text, markdown

__all__ = ["COLUMNS", "PIVOT_METRICS", "PlainProgress", "RichProgress", "STATUS_STYLE",
           "THROTTLE_MARK", "axis_value", "by_dataset", "cell_label", "csv_text", "fmt_count",
           "fmt_error", "fmt_number", "fmt_seconds", "fmt_spread", "group_key", "header_line",
           "make_progress", "markdown", "notes", "pivot", "pivot_layout", "pivot_markdown",
           "pivot_table", "render", "row_cells", "run_table", "sweep_cells", "sweeps",
           "table_title"]
