"""Printing: one interface (:mod:`.printer`: :class:`Printer`, :class:`Multiplex`, the
``--format`` registry) and one module per printer (nvbench style): terminal (rich, fitted to the
width), markdown, CSV, JSON, HTML, plots.

Reports arrive as data: result documents (plain run dicts, as stored in result files, or
``RunRecord``\\ s), pivots (:mod:`.pivot`), the compare gate's verdicts, history trends, a results
folder's summary, a cluster's scaling rows. :mod:`.tables` turns each into
:class:`~.listing.Listing` tables; a printer renders those. :mod:`.formats` writes numbers,
times and errors; :mod:`.rows` the run rows and notes; :mod:`.sweeps` model sweeps;
:mod:`.progress` the lines shown while running.
"""
from .csv_printer import CsvPrinter, csv_text
from .formats import (STATUS_STYLE, THROTTLE_MARK, fmt_count, fmt_error, fmt_number, fmt_seconds,
                      fmt_spread)
from .html_printer import HtmlPrinter
from .json_printer import JsonPrinter
from .listing import Column, Listing, Styled
from .markdown_printer import MarkdownPrinter, markdown, pivot_markdown
from .pivot import PIVOT_METRICS, Pivot, axis_value, make_pivot, pivot, pivot_layout
from .printer import Multiplex, Printer
from .registry import PRINTERS, format_names, get_printer, register
from .progress import PlainProgress, RichProgress, make_progress
from .rows import (COLUMNS, by_dataset, cell_label, group_key, header_line, notes, row_cells,
                   table_title)
from .sweeps import sweep_cells, sweeps
from .terminal_printer import TerminalPrinter, make_console


def render(doc_or_runs, console=None) -> None:
    """The terminal report of a result document (or of runs) on ``console``."""
    TerminalPrinter(console).print_run(doc_or_runs)


__all__ = ["COLUMNS", "Column", "CsvPrinter", "HtmlPrinter", "JsonPrinter", "Listing",
           "MarkdownPrinter", "Multiplex", "PIVOT_METRICS", "PRINTERS", "Pivot", "PlainProgress",
           "Printer", "RichProgress", "STATUS_STYLE", "Styled", "THROTTLE_MARK",
           "TerminalPrinter", "axis_value", "by_dataset", "cell_label", "csv_text",
           "fmt_count", "fmt_error", "fmt_number", "fmt_seconds", "fmt_spread", "format_names",
           "get_printer", "group_key", "header_line", "make_console", "make_pivot",
           "make_progress", "markdown", "notes", "pivot", "pivot_layout", "pivot_markdown",
           "register", "render", "row_cells", "sweep_cells", "sweeps", "table_title"]
