"""A table as plain data: what every printer renders (rich, markdown, CSV, JSON, HTML).

Reports build :class:`Listing` objects from their data (runs, verdicts, trends, scaling rows,
catalogs); only the printers turn them into text, so the terminal's width rules, the markdown
syntax and the escaping of user strings live in one place each.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


@dataclass(frozen=True)
class Styled:
    """A cell with a style name for printers that colour (status, verdict); text is plain."""
    text: str
    style: str = ""

    def __str__(self) -> str:
        return self.text


Cell = Union[str, Styled]


@dataclass(frozen=True)
class Column:
    """One column. ``key``: names what a row is (backend, dataset): repeated in every part when
    a narrow terminal splits the table, never cut. ``wrap``: free text (notes, reasons) that may
    wrap at words. ``priority``: lower shows first when the table is split (0: must stay in the
    first part: GCUPS, status, verdict). ``name_header``: the header is a name (a pivot's
    backend), kept on one line."""
    header: str
    right: bool = False
    key: bool = False
    wrap: bool = False
    priority: int = 5
    name_header: bool = False


@dataclass
class Listing:
    title: str
    columns: list
    rows: list = field(default_factory=list)        # [[Cell, ...], ...] in columns order
    notes: list = field(default_factory=list)       # [[Cell, ...]] lines printed below it
    name: Optional[str] = None                      # what it is (JSON key), e.g. "compare"

    def add(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def headers(self) -> list:
        return [c.header for c in self.columns]

    def plain_rows(self) -> list:
        return [[str(c) for c in row] for row in self.rows]

    def to_dict(self) -> dict:
        return {"title": self.title, "columns": self.headers(),
                "rows": [dict(zip(self.headers(), row)) for row in self.plain_rows()],
                "notes": ["".join(str(c) for c in line) for line in self.notes]}
