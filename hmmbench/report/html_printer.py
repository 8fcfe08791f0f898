"""The HTML printer: the result documents printed to it as one self-contained page
(:mod:`.html_page`), written when the printer closes."""
from __future__ import annotations

import os

from .printer import RunsOnly


class HtmlPrinter(RunsOnly):
    """``stream``: a file path (``report --html PAGE``: written in place, atomically, readable
    as the umask allows) or a text stream (``--format html``). Only result documents make the
    page; tables and log lines of other reports are left out."""

    name = "html"

    def __init__(self, stream=None, title: str = "hmmbench results"):
        self.path = stream if isinstance(stream, (str, os.PathLike)) else None
        super().__init__(None if self.path is not None else stream)
        self.title = title
        self.docs: list = []

    def print_run(self, doc, path=None, scaling=None) -> None:
        if isinstance(doc, dict):
            self.docs.append((str(path or f"document {len(self.docs) + 1}"), doc))

    def close(self) -> None:
        from .html_page import html_page, write_html
        if not self.docs:
            return
        if self.path is not None:
            write_html(self.docs, self.path, self.title)
        else:
            self.stream.write(html_page(self.docs, self.title))
        self.docs = []
