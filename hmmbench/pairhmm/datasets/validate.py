"""Checks shared by the text loaders (block format and GATK 7-field format).

Every check raises :class:`hmmbench.errors.InputError` located by path and 1-based line, with a
message that names the offending field and value. Checks work on whole byte strings with C-level
operations (``bytes.translate``, ``min``/``max``) so that loading stays fast.
"""
from __future__ import annotations

from ...errors import InputError
from ..model import MAX_PHRED, Read

VALID_BASES = b"ACGTNacgtn"
#: Phred+33: '!' is quality 0, '~' is quality 93 (MAX_PHRED).
QUAL_MIN_CHAR = 33
QUAL_MAX_CHAR = 33 + MAX_PHRED

#: Names used in messages, in the order of a read record's quality fields.
QUALITY_FIELDS = ("base", "insertion", "deletion", "gap continuation")


def _show(byte: int) -> str:
    """A character as the user would recognise it in a message."""
    ch = chr(byte)
    return f"'{ch}'" if 33 <= byte < 127 else f"byte 0x{byte:02x}"


def check_bases(path: str, line: int, seq: bytes, what: str) -> None:
    """Non-empty and only A, C, G, T, N (either case)."""
    if not seq:
        raise InputError(path, line, f"{what} is empty")
    bad = seq.translate(None, VALID_BASES)
    if bad:
        col = seq.index(bad[:1]) + 1
        raise InputError(path, line, f"invalid base {_show(bad[0])} at position {col} of {what} "
                                     f"(only A, C, G, T, N are allowed)")


def check_quality(path: str, line: int, qual: bytes, what: str) -> None:
    """Phred+33 characters from '!' (0) to '~' (93)."""
    lo, hi = min(qual), max(qual)
    if lo < QUAL_MIN_CHAR:
        raise InputError(path, line, f"{what} quality character {_show(lo)} at position "
                                     f"{qual.index(bytes([lo])) + 1} is below '!' (Phred 0)")
    if hi > QUAL_MAX_CHAR:
        raise InputError(path, line, f"{what} quality character {_show(hi)} at position "
                                     f"{qual.index(bytes([hi])) + 1} is above Phred {MAX_PHRED} "
                                     f"('~')")


def check_read(path: str, line: int, bases: bytes, quals) -> Read:
    """One read record: bases plus the four quality strings, all of the same length."""
    check_bases(path, line, bases, "read bases")
    n = len(bases)
    for q, what in zip(quals, QUALITY_FIELDS):
        if len(q) != n:
            raise InputError(path, line, f"read has {n} bases but {len(q)} {what} qualities")
        check_quality(path, line, q, what)
    return Read(bases, *quals)


def parse_count(path: str, line: int, token: bytes, what: str) -> int:
    """A block header count: a non-negative decimal integer."""
    text = token.decode("ascii", "replace")
    if not token.isdigit():
        if token[:1] == b"-" and token[1:].isdigit():
            raise InputError(path, line, f"block header: {what} count {text} is negative")
        raise InputError(path, line, f"block header: {what} count '{text}' is not a number")
    return int(token)


def read_lines(path) -> list:
    """The file's lines as bytes (no line ends); an empty file is an error, and so is anything
    but a regular file (a FIFO, a device: refused before it is opened, never read)."""
    from ...fileio import read_input_bytes
    data = read_input_bytes(path)
    if not data.strip():
        raise InputError(str(path), 1, "file is empty" if not data else "file has only blank lines")
    return data.splitlines()
