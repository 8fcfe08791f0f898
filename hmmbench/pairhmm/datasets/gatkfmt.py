"""GATK 7-field format (GATK's ``--pair-hmm-results-file`` output; GATK's and GKL's test data).

An optional header line ``# hap-bases read-bases read-qual read-ins-qual read-del-qual gcp
expected-result`` (any line starting with ``#`` is a comment), then one pair per line with 7
whitespace-separated fields -- haplotype first -- and the expected log10 likelihood last.

Batches are rebuilt from line order: GATK writes an active region read-major over its haplotypes
(r0h0, r0h1, ..., r1h0, r1h1, ...). A run of lines sharing one read record (bases and all four
qualities) gives that read's haplotype list; consecutive reads with exactly the same list form one
batch, provided there are at least two such reads. Anything else (GKL's unrelated pairs, or a
single read against several haplotypes) becomes one batch per line. Pair order always equals line
order, so results compare line by line.
"""
from __future__ import annotations

import math

from ...errors import InputError
from ..model import Batch, PairSet, pack
from .textout import hap_text, read_line
from .validate import check_bases, check_read, read_lines

N_FIELDS = 7
FIELD_NAMES = ("haplotype bases", "read bases", "base qualities", "insertion qualities",
               "deletion qualities", "gap continuation qualities", "expected result")


def _field_count_error(path: str, line: int, raw: bytes, n: int) -> InputError:
    # Split on single separators to point at an empty field ("A  B") rather than a bare count.
    for sep in (b"\t", b" "):
        parts = raw.strip(b"\r\n").split(sep)
        if len(parts) == N_FIELDS and any(not p for p in parts):
            k = next(k for k, p in enumerate(parts) if not p)
            return InputError(path, line, f"{FIELD_NAMES[k]} (field {k + 1}) is empty")
    return InputError(path, line, f"expected {N_FIELDS} fields (hap-bases read-bases read-qual "
                                  f"read-ins-qual read-del-qual gcp expected-result), got {n}")


def _parse_expected(path: str, line: int, token: bytes) -> float:
    """A number, or -inf (-Infinity): GATK's answer for a pair past float64's range."""
    try:
        value = float(token)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) or value == -math.inf):
        raise InputError(path, line, f"expected result '{token.decode('ascii', 'replace')}' is "
                                     f"not a finite number (or -Infinity)")
    return value


def load_gatk(path) -> PairSet:
    """Parse and validate a GATK 7-field file into a PairSet with ``expected`` kept."""
    path_s = str(path)
    records = []   # (haplotype bytes, Read, expected), in line order
    for lineno, raw in enumerate(read_lines(path), start=1):
        if raw.startswith(b"#"):
            continue
        fields = raw.split()
        if not fields:
            continue
        if len(fields) != N_FIELDS:
            raise _field_count_error(path_s, lineno, raw, len(fields))
        check_bases(path_s, lineno, fields[0], "haplotype")
        read = check_read(path_s, lineno, fields[1], fields[2:6])
        records.append((fields[0], read, _parse_expected(path_s, lineno, fields[6])))
    if not records:
        raise InputError(path_s, 1, "no pairs (only comments or blank lines)")
    return pack(_batches(records))


def _batches(records) -> list:
    """Regroup pairs into batches (see the module docstring); pair order is line order."""
    # Runs of consecutive lines with the same read record: (start, stop) indices into records.
    runs, start = [], 0
    for k in range(1, len(records) + 1):
        if k == len(records) or records[k][1] != records[start][1]:
            runs.append((start, k))
            start = k

    def hap_list(run):
        return [records[k][0] for k in range(*run)]

    batches, a = [], 0
    while a < len(runs):
        haps = hap_list(runs[a])
        b = a + 1
        while b < len(runs) and hap_list(runs[b]) == haps:
            b += 1
        if b - a >= 2:
            lo, hi = runs[a][0], runs[b - 1][1]
            reads = [records[runs[r][0]][1] for r in range(a, b)]
            batches.append(Batch(reads=reads, haplotypes=haps,
                                 expected=[records[k][2] for k in range(lo, hi)]))
        else:
            for k in range(*runs[a]):
                hap, read, expected = records[k]
                batches.append(Batch(reads=[read], haplotypes=[hap], expected=[expected]))
            b = a + 1
        a = b
    return batches



HEADER = "# hap-bases read-bases read-qual read-ins-qual read-del-qual gcp expected-result"


def format_gatk(pairs: PairSet, results=None) -> str:
    """The PairSet as GATK 7-field text, one line per pair in pair order.

    ``results`` (log10 per pair) fills the last field; default: the set's expected values.
    """
    values = pairs.expected if results is None else results
    if values is None:
        raise ValueError("no results to write: pass results= or a PairSet with expected values")
    lines = [HEADER]
    for p in range(pairs.n_pairs):
        lines.append(f"{hap_text(pairs, pairs.pair_hap[p])} {read_line(pairs, pairs.pair_read[p])} "
                     f"{float(values[p]):e}")
    return "\n".join(lines) + "\n"
