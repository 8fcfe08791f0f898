"""Block format (``*.in``: the Carneiro PairHMM test data, as used by Ren et al. and gpuPairHMM).

A block is a header line ``R H`` (two non-negative integers), then R read lines
``bases base-quals ins-quals del-quals gcp-quals`` (Phred+33, each as long as the bases), then H
haplotype lines. Fields are whitespace-separated; blank lines between blocks are ignored, a blank
line inside a block is an empty read or haplotype (an error). Every read of a block is aligned to
every haplotype of that block; pairs are ordered block by block, read-major.
"""
from __future__ import annotations

from ...errors import InputError
from ..model import Batch, PairSet, pack
from .textout import hap_text, read_line
from .validate import check_bases, check_read, parse_count, read_lines


def load_block(path) -> PairSet:
    """Parse and validate a block-format file into a PairSet (one batch per block)."""
    path_s = str(path)
    lines = read_lines(path)
    n_lines = len(lines)
    batches = []
    i = 0
    while i < n_lines:
        fields = lines[i].split()
        if not fields:          # blank line between blocks
            i += 1
            continue
        header_line = i + 1
        if len(fields) != 2:
            raise InputError(path_s, header_line, _not_a_header(fields))
        n_reads = parse_count(path_s, header_line, fields[0], "read")
        n_haps = parse_count(path_s, header_line, fields[1], "haplotype")
        if n_reads == 0 or n_haps == 0:
            raise InputError(path_s, header_line,
                             f"block header '{n_reads} {n_haps}': a block needs at least one "
                             f"read and one haplotype")
        i += 1
        if i + n_reads + n_haps > n_lines:
            got = n_lines - i
            raise InputError(path_s, n_lines,
                             f"truncated block: header at line {header_line} announces "
                             f"{n_reads} reads + {n_haps} haplotypes but the file ends after "
                             f"{got} more line{'s' if got != 1 else ''}")
        reads = []
        for k in range(n_reads):
            fields = lines[i].split()
            if len(fields) != 5:
                what = ("empty line" if not fields else f"{len(fields)} field"
                        + ("s" if len(fields) != 1 else ""))
                raise InputError(path_s, i + 1,
                                 f"read {k + 1} of {n_reads} of the block at line {header_line} "
                                 f"must have 5 fields (bases and 4 quality strings), got {what}")
            reads.append(check_read(path_s, i + 1, fields[0], fields[1:]))
            i += 1
        haps = []
        for k in range(n_haps):
            fields = lines[i].split()
            if len(fields) != 1:
                if not fields:
                    raise InputError(path_s, i + 1,
                                     f"haplotype {k + 1} of {n_haps} of the block at line "
                                     f"{header_line} is empty")
                raise InputError(path_s, i + 1,
                                 f"haplotype {k + 1} of {n_haps} of the block at line "
                                 f"{header_line} must have 1 field, got {len(fields)}")
            check_bases(path_s, i + 1, fields[0], "haplotype")
            haps.append(fields[0])
            i += 1
        batches.append(Batch(reads=reads, haplotypes=haps))
    return pack(batches)


def _not_a_header(fields: list) -> str:
    """What a line that should be a block header looks like instead."""
    n = len(fields)
    if n >= 6:
        what = f"a GATK line (7 fields, haplotype first) given where a block header was expected"
    elif n == 5:
        what = "a read line given where a block header was expected (more reads than announced?)"
    elif n == 1 and not fields[0].isdigit():
        what = "a haplotype given where a block header was expected (more haplotypes than announced?)"
    else:
        what = "a block header has 2 fields 'READS HAPLOTYPES'"
    return f"{n} field{'s' if n != 1 else ''}: {what}"


def format_block(pairs: PairSet) -> str:
    """The PairSet as block-format text (loads back to the same batches and pairs)."""
    out = []
    for b in range(pairs.n_batches):
        r0, r1 = int(pairs.batch_reads[b]), int(pairs.batch_reads[b + 1])
        h0, h1 = int(pairs.batch_haps[b]), int(pairs.batch_haps[b + 1])
        out.append(f"{r1 - r0} {h1 - h0}")
        out.extend(read_line(pairs, r) for r in range(r0, r1))
        out.extend(hap_text(pairs, h) for h in range(h0, h1))
    return "\n".join(out) + "\n"
