"""The ``--format`` registry: name -> printer factory. The built-in printers are registered on
first use; :func:`register` adds one (a plugin's own format). Kept apart from :mod:`.printer`, the
interface every printer module imports, so that imports run one way."""
from __future__ import annotations

from typing import Callable

from ..errors import UserError
from .printer import Printer


#: --format name -> a factory taking the output stream (or a path, for file outputs)
PRINTERS: dict = {}


def register(name: str, factory: Callable) -> None:
    PRINTERS[name] = factory


def get_printer(name: str, stream=None) -> Printer:
    """The printer ``--format name`` names, writing to ``stream`` (default stdout)."""
    if not PRINTERS:
        _register_builtin()
    if name not in PRINTERS:
        raise UserError(f"unknown format '{name}' (valid: {', '.join(PRINTERS)})")
    return PRINTERS[name](stream)


def format_names() -> list:
    if not PRINTERS:
        _register_builtin()
    return list(PRINTERS)


def _register_builtin() -> None:
    from .csv_printer import CsvPrinter
    from .html_printer import HtmlPrinter
    from .json_printer import JsonPrinter
    from .markdown_printer import MarkdownPrinter
    from .terminal_printer import TerminalPrinter
    for cls in (TerminalPrinter, MarkdownPrinter, CsvPrinter, JsonPrinter, HtmlPrinter):
        PRINTERS.setdefault(cls.name, cls)
