"""Every number of a HMMER3 text model file checked, with its line, before pyhmmer reads it.

pyhmmer (HMMER's own parser) reads some broken numbers without complaint: ``x.yz`` as 0 (a
probability of 1), ``nan``; ``HMM.validate()`` refuses negatives and sums far from 1 but names no
line. This module reads the file line by line: every emission and transition is ``*`` (a zero
probability) or a finite -ln probability, not negative; each distribution sums to 1 within
HMMER's tolerance; the header numbers (LENG, NSEQ, EFFN, GA/TC/NC, STATS) are finite and in
range; the node lines come in order, M of them. A problem is an :class:`InputError` at its line.
"""
from __future__ import annotations

import hashlib
import math
import re
from typing import Optional

from ..errors import InputError

#: HMMER's tolerance on a distribution's sum (``p7_hmm_Validate``; pyhmmer's default).
SUM_TOLERANCE = 1e-4
#: File values carry 5 decimals of -ln p: allow their rounding on top of the tolerance.
ROUNDING = 1e-5
ALPHABET_SIZE = {"amino": 20, "dna": 4, "rna": 4, "coins": 2, "dice": 6}
#: transition groups of a node line: m->(m, i, d), i->(m, i), d->(m, d)
TRANSITION_GROUPS = (("match", 0, 3), ("insert", 3, 5), ("delete", 5, 7))
TRANSITIONS = "m->m m->i m->d i->m i->i d->m d->d".split()


#: A plain -ln probability as HMMER writes it, or ``*``; a line of them, single-spaced.
_NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\*"
_PLAIN = re.compile(rf"(?:{_NUMBER})(?: (?:{_NUMBER}))*")


class _Lines:
    """The file's lines as text, numbered; non-UTF-8 bytes are an InputError at their line.
    ``sums``: also add up every distribution (else only the tokens are checked)."""

    def __init__(self, path: str, fh, sums: bool = True):
        self.path, self.fh, self.n, self.sums = path, fh, 0, sums
        self.pushed: Optional[str] = None

    def unread(self, text: str) -> None:
        self.pushed = text
        self.n -= 1

    def next(self) -> Optional[str]:
        if self.pushed is not None:
            text, self.pushed = self.pushed, None
            self.n += 1
            return text
        raw = self.fh.readline()
        if not raw:
            return None
        self.n += 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"not UTF-8 HMM text: byte 0x{raw[exc.start]:02x} at column "
                             f"{exc.start + 1}") from None

    def error(self, message: str, line: Optional[int] = None) -> InputError:
        return InputError(self.path, self.n if line is None else line, message)


def _score(lines: _Lines, token: str, what: str) -> float:
    """A -ln probability field: ``*`` (probability 0) or a finite number >= 0."""
    if token == "*":
        return math.inf
    try:
        value = float(token)
    except ValueError:
        raise lines.error(f"{what} '{token[:20]}' is not a number") from None
    if not math.isfinite(value) or token.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise lines.error(f"{what} '{token[:20]}' is not a finite number (HMMER writes a zero "
                          "probability as '*')")
    if value < 0:
        raise lines.error(f"{what} {token} is negative: a -ln probability is at least 0 "
                          "(a probability above 1)")
    return value


def _distribution(lines: _Lines, tokens: list, what: str) -> None:
    if not lines.sums and _PLAIN.fullmatch(" ".join(tokens)):
        return            # plain numbers (one regex, fast on Pfam-sized files); the sums later
    total = sum(math.exp(-_score(lines, t, what)) for t in tokens)
    if abs(total - 1.0) > SUM_TOLERANCE + ROUNDING * len(tokens):
        raise lines.error(f"{what} probabilities sum to {total:.6g}, not 1 (HMMER's tolerance "
                          f"{SUM_TOLERANCE:g})")


def _numbers(lines: _Lines, tokens: list, n: int, what: str) -> list:
    if len(tokens) < n:
        raise lines.error(f"{what}: {len(tokens)} fields, expected {n} (a truncated line?)")
    return tokens[:n]


def _header_number(lines: _Lines, tag: str, token: str, integer: bool = False,
                   positive: bool = False) -> float:
    try:
        value = int(token) if integer else float(token)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise lines.error(f"{tag} '{token[:20]}' is not {kind}") from None
    if not math.isfinite(value):
        raise lines.error(f"{tag} '{token[:20]}' is not a finite number")
    if positive and value <= 0 or value < 0 and tag in ("NSEQ", "EFFN"):
        raise lines.error(f"{tag} {token} must be {'above 0' if positive else 'at least 0'}")
    return value


def _header(lines: _Lines, first: int) -> tuple:
    """(M, K) from the header lines up to and including the ``HMM`` line."""
    M = K = None
    alph_line = None
    while True:
        text = lines.next()
        if text is None:
            raise lines.error("the file ends inside a model header (no 'HMM' line)")
        fields = text.split()
        if not fields:
            continue
        tag = fields[0]
        if tag == "LENG":
            if len(fields) < 2:
                raise lines.error("LENG has no value")
            M = int(_header_number(lines, "LENG", fields[1], integer=True, positive=True))
        elif tag == "ALPH":
            if len(fields) < 2 or fields[1].lower() not in ALPHABET_SIZE:
                raise lines.error(f"ALPH '{' '.join(fields[1:])[:20]}' is not a HMMER alphabet")
            K, alph_line = ALPHABET_SIZE[fields[1].lower()], lines.n
        elif tag in ("NSEQ",):
            _header_number(lines, tag, fields[1] if len(fields) > 1 else "", integer=True)
        elif tag == "EFFN":
            _header_number(lines, tag, fields[1] if len(fields) > 1 else "")
        elif tag in ("GA", "TC", "NC"):
            values = [f.rstrip(";") for f in fields[1:3]]
            if len(values) < 2:
                raise lines.error(f"{tag} needs 2 numbers")
            for v in values:
                _header_number(lines, tag, v)
        elif tag == "STATS":
            if len(fields) < 5:
                raise lines.error("STATS needs 'LOCAL MSV|VITERBI|FORWARD mu lambda'")
            _header_number(lines, f"STATS {fields[2]} mu", fields[3])
            _header_number(lines, f"STATS {fields[2]} lambda", fields[4], positive=True)
        elif tag == "HMM":
            if M is None:
                raise lines.error(f"the model starting at line {first} has no LENG line")
            if K is None:
                raise lines.error(f"the model starting at line {first} has no ALPH line")
            if len(fields) - 1 != K:
                raise lines.error(f"the HMM line names {len(fields) - 1} symbols; the "
                                  f"alphabet of line {alph_line} has {K}")
            return M, K


def _node(lines: _Lines, K: int, k: int) -> None:
    """Node k's three lines (k = 0: the insert and transition lines only)."""
    if k:
        text = lines.next()
        fields = (text or "").split()
        if text is None or fields[:1] == ["//"]:
            raise lines.error(f"node {k} is missing: the model ends before its LENG nodes")
        if not fields:
            raise lines.error(f"a blank line where node {k}'s match emission line belongs")
        if fields[0] != str(k):
            raise lines.error(f"expected node {k}'s match emission line, found "
                              f"'{' '.join(fields[:2])[:30]}'")
        _distribution(lines, _numbers(lines, fields[1:], K, f"node {k} match emission"),
                      f"node {k} match emission")
    text = lines.next()
    if text is None:
        raise lines.error(f"the file ends inside node {k}")
    _distribution(lines, _numbers(lines, text.split(), K, f"node {k} insert emission"),
                  f"node {k} insert emission")
    text = lines.next()
    if text is None:
        raise lines.error(f"the file ends inside node {k}")
    values = _numbers(lines, text.split(), 7, f"node {k} transition")
    for name, lo, hi in TRANSITION_GROUPS:
        _distribution(lines, values[lo:hi], f"node {k} {name} transition "
                                            f"({', '.join(TRANSITIONS[lo:hi])})")


#: (content digest, sums) of the files this process found clean -> their model count: a run
#: reads a model file again for every model of it that it searches, and the same bytes check
#: the same
_CLEAN: dict = {}


def _content_key(fh, sums: bool) -> Optional[tuple]:
    """(digest of the open file's bytes, sums), the file rewound; None where it cannot seek."""
    try:
        if not fh.seekable():
            return None
        start = fh.tell()
        digest = hashlib.blake2b(digest_size=20)
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
        fh.seek(start)
    except (AttributeError, OSError):
        return None
    return digest.digest(), sums


def check_hmm_file(path: str, fh, sums: bool = True) -> int:
    """Check every model of an open (binary) HMMER3 text file; return how many there are.
    ``sums=False``: the numbers only, not the sums of the distributions (half the time: a
    Pfam-sized file in about twice pyhmmer's own reading time); HMMER's ``validate`` checks the
    sums, and a file with a model it refuses is read again with ``sums=True``, for the line.
    Bytes found clean before (with the same ``sums``) are not read again."""
    key = _content_key(fh, sums)
    if key in _CLEAN:
        return _CLEAN[key]
    models = _check(path, fh, sums)
    if key is not None:
        _CLEAN[key] = models
    return models


def _check(path: str, fh, sums: bool) -> int:
    head = fh.peek(16)[:16] if hasattr(fh, "peek") else b""
    if not head.lstrip().startswith(b"HMMER3"):
        return 0        # not HMMER3 text (a pressed binary file, HMMER2...): pyhmmer decides
    lines = _Lines(path, fh, sums)
    models = 0
    while True:
        text = lines.next()
        if text is None:
            return models
        if not text.strip():
            continue
        if not text.startswith("HMMER3"):
            if models == 0:
                return 0        # not a HMMER3 text file: pyhmmer names what it is (or is not)
            raise lines.error(f"expected a new model ('HMMER3/f ...') after '//', found "
                              f"'{text.strip()[:30]}'")
        first = lines.n
        M, K = _header(lines, first)
        if lines.next() is None:                        # the m->m m->i ... line
            raise lines.error("the file ends after the HMM line")
        text = lines.next()
        if text is None:
            raise lines.error("the file ends after the HMM line")
        fields = text.split()
        if fields[:1] == ["COMPO"]:
            _distribution(lines, _numbers(lines, fields[1:], K, "COMPO"), "COMPO")
        else:                                           # no COMPO: this was node 0's insert line
            lines.unread(text)
        for k in range(M + 1):
            _node(lines, K, k)
        text = lines.next()
        if text is None or text.split()[:1] != ["//"]:
            raise lines.error(f"expected '//' after node {M} (LENG {M}), found "
                              f"'{(text or 'the end of the file').strip()[:30]}'")
        models += 1
