"""The terminal printer: rich tables that fit the console's width (the only place rich tables
are built).

A table wider than the console is split, never cut: its key columns (the names that say what a
row is) repeat in every part and the other columns fill parts in priority order, so GCUPS,
status and verdict stay in the first part; key columns too wide to sit side by side are stacked
into one column, one name a line; free text wraps at words. Every cell is a rich ``Text``, never
markup, so a name such as ``b[/]x`` prints as itself.
"""
from __future__ import annotations

import os
import sys
import textwrap

from .listing import Listing, Styled
from .printer import Printer
from . import tables

#: Width of piped output when COLUMNS does not say (a log keeps whole rows).
PIPE_WIDTH = 200
#: Free-text columns (notes, reasons) narrower than this wrap rather than split the table.
WRAP_MIN = 24
#: Key columns may take at most this share of the width before they stack (then fold).
KEY_SHARE = 0.6


def make_console(stream=None, width=None):
    """A rich console on ``stream``: a terminal's own width, else ``$COLUMNS``, else
    :data:`PIPE_WIDTH`."""
    from rich.console import Console
    stream = stream if stream is not None else sys.stdout
    tty = getattr(stream, "isatty", lambda: False)()
    if width is None and not tty and not os.environ.get("COLUMNS", "").strip().isdigit():
        width = PIPE_WIDTH
    return Console(file=stream, width=width)


def _text(cell, style: str = ""):
    from rich.text import Text
    if isinstance(cell, Styled):
        return Text(cell.text, style=cell.style)
    return Text(str(cell), style=style)


def _width(text: str) -> int:
    from rich.cells import cell_len
    return max((cell_len(line) for line in str(text).split("\n")), default=0)


def _table_width(widths) -> int:
    """A rich table's width with edges and one space of padding each side: │ a │ b │."""
    return 1 + sum(w + 3 for w in widths)


def _tokens(text: str, seps: str) -> list:
    import re
    return [t for t in re.findall(f"[^{re.escape(seps)}]*[{re.escape(seps)}]?", text) if t]


def break_name(text: str, width: int) -> str:
    """A name too long for ``width`` on several lines, broken after its separators (``,[/`` and
    spaces first, then ``-_``) where it can, so no part of it is lost."""
    parts = []
    for token in _tokens(text, ",[/ "):
        if len(token) <= width:
            parts.append(token)
            continue
        for piece in _tokens(token, "-_"):
            parts += [piece[i:i + width] for i in range(0, len(piece), width)]
    lines, line = [], ""
    for part in parts:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join(x.rstrip() for x in lines + [line] if x.strip())


def _compact(text: str) -> str:
    """A figure with its spread on a second line: "473 ms (456–483)" -> "473 ms\n(456–483)"."""
    return text.replace(" (", "\n(", 1)


class _Col:
    """A column as laid out: its index in the listing, header lines, width, folding."""

    def __init__(self, index: int, column, values: list):
        self.index, self.column = index, column
        widest = max((_width(v) for v in values), default=0)
        words = [column.header] if column.name_header else column.header.split()
        longest_word = max((_width(w) for w in words), default=0)
        if column.wrap:
            self.width = max(min(max(widest, _width(column.header)), WRAP_MIN), longest_word)
        else:
            self.width = max(widest, longest_word)
        # figures with a spread may put it on a second line where the width is short
        self.compact_width = max([longest_word] + [_width(_compact(v)) for v in values]) \
            if not (column.key or column.wrap) else self.width
        self.compact = False
        self.fold = False

    def squeeze(self) -> None:
        if self.compact_width < self.width:
            self.width, self.compact = self.compact_width, True

    def cell(self, value):
        if self.compact:
            return Styled(_compact(str(value)), getattr(value, "style", ""))
        return value

    def header(self) -> str:
        if _width(self.column.header) <= self.width:
            return self.column.header
        return "\n".join(textwrap.wrap(self.column.header, max(self.width, 1)))


def layout(listing: Listing, width: int) -> list:
    """The parts a listing prints as: [(key, [_Col, ...])], key None for a table that fits
    whole, else ('side', cols) or ('stacked', cols) for the key columns every part repeats.
    Figures with a spread put it on a second line before a table is split."""
    rows = listing.plain_rows()
    cols = [_Col(i, c, [row[i] for row in rows]) for i, c in enumerate(listing.columns)]
    if _table_width(c.width for c in cols) <= width:
        return [(None, cols)]
    for c in cols:
        c.squeeze()
    if _table_width(c.width for c in cols) <= width:
        return [(None, cols)]
    keys = [c for c in cols if c.column.key]
    rest = [c for c in cols if not c.column.key]
    key_cap = int(width * KEY_SHARE)
    how = "side"
    key_width = _table_width(c.width for c in keys) - 1 if keys else 0
    if len(keys) > 1 and key_width > key_cap:
        how = "stacked"
        keys = [_Stacked(keys, rows)]
        key_width = keys[0].width + 3
    # one name column may take what the widest must-show column leaves; past that it breaks
    first = [c.width for c in rest if c.column.priority == 0] or [8]
    name_cap = max(key_cap, width - 7 - max(first))
    if len(keys) == 1 and keys[0].width > name_cap:
        keys[0].width, keys[0].fold = max(name_cap, 8), True
        key_width = keys[0].width + 3
    avail = width - 1 - key_width
    groups: list = []
    for c in sorted(rest, key=lambda c: (c.column.priority, c.index)):
        need = c.width + 3
        if need > avail:
            c.width, c.fold = max(avail - 3, 4), True
            need = c.width + 3
        for g in groups:
            if sum(x.width + 3 for x in g) + need <= avail:
                g.append(c)
                break
        else:
            groups.append([c])
    return [((how, keys), sorted(g, key=lambda c: c.index)) for g in groups or [[]]]


class _Stacked:
    """Several key columns as one: each row's names one under another."""

    def __init__(self, keys: list, rows: list):
        self.keys = keys
        self.index = keys[0].index
        self.fold = False
        self.width = max(k.width for k in keys)
        self.head = " /\n".join(k.column.header for k in keys)
        self.width = max(self.width, max(_width(k.column.header) + 2 for k in keys))

    def header(self) -> str:
        return self.head

    def cells(self, row: list, width=None) -> str:
        names = [str(row[k.index]) for k in self.keys if str(row[k.index]) not in ("", "None")]
        return "\n".join(break_name(n, width) if width else n for n in names)


class TerminalPrinter(Printer):
    """Reports as rich tables on a console (``stream``: a rich Console, or a file)."""

    name = "table"

    def __init__(self, stream=None):
        from rich.console import Console
        self.console = stream if isinstance(stream, Console) else make_console(stream)
        super().__init__(self.console.file)

    def print_log(self, text: str, style: str = "") -> None:
        self.console.print(_text(text, style), highlight=False)

    def progress(self):
        """A live bar with a line per finished cell on a terminal, plain lines in a log."""
        from .progress import PlainProgress, RichProgress
        return RichProgress(self.console) if self.console.is_terminal \
            else PlainProgress(self.console.file)

    def print_listing(self, listing: Listing) -> None:
        from rich.table import Table
        from rich.text import Text
        for n, (key, cols) in enumerate(layout(listing, self.console.width)):
            t = Table(title=_text(listing.title) if n == 0 else None, title_justify="left",
                      header_style="bold")
            if n:                                    # the same rows, the next columns
                t.title = Text("… continued", style="dim")
            keys = key[1] if key else []
            for c in keys + cols:
                column = getattr(c, "column", None)
                right = bool(column and column.right)
                wrap = bool(column and column.wrap)
                t.add_column(Text(c.header()), justify="right" if right else "left",
                             no_wrap=not (wrap or c.fold), overflow="fold",
                             min_width=None if (wrap or c.fold) else c.width,
                             max_width=c.width if c.fold else None)
            for row in listing.rows:
                plain = [str(x) for x in row]
                lead = [Text(k.cells(plain, k.width if k.fold else None))
                        if isinstance(k, _Stacked) else
                        Text(break_name(plain[k.index], k.width)) if k.fold else
                        _text(row[k.index]) for k in keys]
                t.add_row(*lead, *(_text(c.cell(row[c.index])) for c in cols))
            self.console.print(t)
        for line in listing.notes:
            self.console.print(Text.assemble(*(_text(x) for x in line)), highlight=False)

    def print_pivot(self, pivot) -> None:
        """Rows x columns, or the columns (backends) down the side where that splits less."""
        wide, tall = tables.pivot_listing(pivot), tables.pivot_listing(pivot, transpose=True)
        width = self.console.width
        self.print_listing(tall if len(layout(tall, width)) < len(layout(wide, width)) else wide)
