"""Block-format and GATK 7-field loaders: real files round-trip, every bad input is located."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import SHARED_DATA
from hmmbench.pairhmm.datasets.blockfmt import load_block
from hmmbench.pairhmm.datasets.gatkfmt import load_gatk
from hmmbench.errors import InputError
from hmmbench.pairhmm.model import BASES

DATA = Path(os.environ.get("HMMBENCH_TEST_DATA",
                           SHARED_DATA))
needs_data = pytest.mark.skipif(not (DATA / "tiny.in").exists(),
                                reason=f"real data not found in {DATA}")

READ = "ACGTN IIIII IIIII IIIII +++++"


def write(tmp_path, name, text) -> str:
    p = tmp_path / name
    p.write_bytes(text.encode("latin-1") if isinstance(text, str) else text)
    return str(p)


def error_of(loader, path) -> str:
    with pytest.raises(InputError) as info:
        loader(path)
    return str(info.value)


# --- real files ------------------------------------------------------------------------------
@needs_data
@pytest.mark.parametrize("name, pairs, batches, cells", [
    ("tiny.in", 332, 3, 492_820),
    ("10s.in", 3_550, 7, 62_380_634),
    ("1m.in", 29_307, 110, 420_144_629),
])
def test_block_real_files(name, pairs, batches, cells):
    ps = load_block(DATA / name)
    assert (ps.n_pairs, ps.n_batches, ps.cells) == (pairs, batches, cells)
    assert ps.expected is None


@needs_data
def test_block_pair_order_is_block_by_block_read_major():
    lines = (DATA / "tiny.in").read_text().split("\n")
    n_reads, n_haps = map(int, lines[0].split())
    first_read = lines[1].split()[0]
    haps = [lines[1 + n_reads + k].strip() for k in range(n_haps)]
    ps = load_block(DATA / "tiny.in")
    decode = lambda codes: bytes(BASES[c] for c in codes).decode()  # noqa: E731
    for k in range(n_haps):   # r0h0, r0h1, ...
        assert decode(ps.read(ps.pair_read[k])) == first_read
        assert decode(ps.hap(ps.pair_hap[k])) == haps[k]
    assert ps.pair_read[n_haps] == 1 and ps.pair_hap[n_haps] == 0


@needs_data
def test_gatk_java_file_batches_and_expected():
    ps = load_gatk(DATA / "gatk-expected.Java.hmmresults.txt")
    assert ps.n_pairs == 284
    # The file holds two active regions (78 reads and 64 reads, each x 2 haplotypes of its own).
    assert list(np.diff(ps.batch_reads)) == [78, 64]
    assert list(np.diff(ps.batch_haps)) == [2, 2]
    lines = [l.split() for l in (DATA / "gatk-expected.Java.hmmresults.txt").read_text()
             .splitlines() if l and not l.startswith("#")]
    np.testing.assert_array_equal(ps.expected, [float(f[6]) for f in lines])
    _assert_line_order(ps, lines)


@needs_data
def test_gkl_testdata_pairs_in_line_order():
    path = DATA / "gkl-pairhmm-testdata.txt"
    ps = load_gatk(path)
    lines = [l.split() for l in path.read_text().splitlines() if l and not l.startswith("#")]
    assert ps.n_pairs == 104 and ps.cells == 754_121
    # Batches are rebuilt from the lines that cycle through one haplotype list; whatever the
    # grouping, every pair must sit at its line's position.
    assert int(np.diff(ps.batch_pairs).sum()) == 104
    _assert_line_order(ps, lines)
    np.testing.assert_array_equal(ps.expected, [float(f[6]) for f in lines])


def _assert_line_order(ps, lines):
    decode = lambda codes: bytes(BASES[c] for c in codes).decode()  # noqa: E731
    for p, f in enumerate(lines):
        assert decode(ps.hap(ps.pair_hap[p])) == f[0]
        r = ps.pair_read[p]
        assert decode(ps.read(r)) == f[1]
        a, b = ps.read_offsets[r], ps.read_offsets[r + 1]
        assert bytes(ps.base_qual[a:b] + 33).decode() == f[2]
        assert bytes(ps.gcp_qual[a:b] + 33).decode() == f[5]


# --- GATK batch reconstruction ----------------------------------------------------------------
def gatk_line(hap, read_bases, value="-1.0e+00", q="I"):
    n = len(read_bases)
    return f"{hap} {read_bases} {q * n} {'I' * n} {'I' * n} {'+' * n} {value}\n"


def test_gatk_cycling_lines_form_one_batch(tmp_path):
    header = "# hap-bases read-bases read-qual read-ins-qual read-del-qual gcp expected-result\n"
    text = header + "".join(gatk_line(h, r) for r in ("ACGT", "ACGA", "TTGA")
                            for h in ("ACGTAC", "ACGAAC"))
    ps = load_gatk(write(tmp_path, "cyc.txt", text))
    assert ps.n_batches == 1 and ps.n_pairs == 6
    assert list(ps.pair_read) == [0, 0, 1, 1, 2, 2] and list(ps.pair_hap) == [0, 1] * 3


def test_gatk_unrelated_pairs_become_one_batch_each(tmp_path):
    # One read against two haplotypes, then a new read against other haplotypes: no cycle.
    text = (gatk_line("ACGTAC", "ACGT") + gatk_line("ACGAAC", "ACGT")
            + gatk_line("TTTTTT", "GGGG") + gatk_line("CCCCCC", "AAAA"))
    ps = load_gatk(write(tmp_path, "unrel.txt", text))
    assert ps.n_batches == 4 and ps.n_pairs == 4
    assert list(ps.expected) == [-1.0] * 4


# --- bad input, block format --------------------------------------------------------------------
@pytest.mark.parametrize("text, where, message", [
    ("", 1, "file is empty"),
    ("\n  \n", 1, "file has only blank lines"),
    ("1 1 1\n" + READ + "\nACGT\n", 1, "a block header has 2 fields"),
    ("x 1\n" + READ + "\nACGT\n", 1, "read count 'x' is not a number"),
    ("1 -2\n" + READ + "\nACGT\n", 1, "haplotype count -2 is negative"),
    ("0 1\nACGT\n", 1, "a block needs at least one read and one haplotype"),
    ("2 1\n" + READ + "\n", 2, "truncated block: header at line 1 announces 2 reads + 1 "
                                "haplotypes but the file ends after 1 more line"),
    ("1 1\n" + READ + "\nACGT\n2 1\n" + READ + "\nACGT\n", 6, "truncated block: header at "
                                                             "line 4"),
    ("1 1\nACGTN IIIII IIIII +++++\nACGT\n", 2, "read 1 of 1 of the block at line 1 must have "
                                               "5 fields (bases and 4 quality strings), got 4"),
    ("1 1\nACGTNA IIIII IIIII IIIII +++++\nACGT\n", 2, "read has 6 bases but 5 base qualities"),
    ("1 1\nACGTN IIIII IIII IIIII +++++\nACGT\n", 2, "read has 5 bases but 4 insertion "
                                                    "qualities"),
    ("1 1\nACGTN IIIII IIIII IIIIII +++++\nACGT\n", 2, "read has 5 bases but 6 deletion "
                                                      "qualities"),
    ("1 1\nACGTN IIIII IIIII IIIII ++++\nACGT\n", 2, "read has 5 bases but 4 gap continuation "
                                                    "qualities"),
    ("1 1\nACXTN IIIII IIIII IIIII +++++\nACGT\n", 2, "invalid base 'X' at position 3 of read "
                                                     "bases"),
    ("1 1\n" + READ + "\nAC-T\n", 3, "invalid base '-' at position 3 of haplotype"),
    ("1 1\nACGTN II\x7fII IIIII IIIII +++++\nACGT\n", 2, "base quality character byte 0x7f at "
                                                        "position 3 is above Phred 93 ('~')"),
    ("1 1\nACGTN IIIII II\x01II IIIII +++++\nACGT\n", 2, "insertion quality character byte 0x01 "
                                                        "at position 3 is below '!'"),
    ("1 2\n" + READ + "\nACGT\n\n", 4, "haplotype 2 of 2 of the block at line 1 is empty"),
    ("1 1\n" + READ + "\nACGT ACGT\n", 3, "haplotype 1 of 1 of the block at line 1 must have "
                                          "1 field, got 2"),
])
def test_block_bad_input(tmp_path, text, where, message):
    path = write(tmp_path, "bad.in", text)
    err = error_of(load_block, path)
    assert err.startswith(f"{path}:{where}: "), err
    assert message in err, err


def test_block_accepts_lowercase_and_blank_lines_between_blocks(tmp_path):
    text = "1 1\nacgtn IIIII IIIII IIIII +++++\nacgt\n\n\n1 1\n" + READ + "\nACGT\n"
    ps = load_block(write(tmp_path, "ok.in", text))
    assert ps.n_batches == 2 and ps.n_pairs == 2
    assert list(ps.read(0)) == [0, 1, 2, 3, 4]


def test_block_message_uses_the_path_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "10s.in", "1 1\nACGTNA IIIII IIIII IIIII +++++\nACGT\n")
    assert error_of(load_block, "10s.in") == "10s.in:2: read has 6 bases but 5 base qualities"


# --- bad input, GATK format ---------------------------------------------------------------------
@pytest.mark.parametrize("text, where, message", [
    ("", 1, "file is empty"),
    ("# hap-bases read-bases read-qual read-ins-qual read-del-qual gcp expected-result\n", 1,
     "no pairs"),
    ("ACGT ACGT IIII IIII IIII ++++\n", 1, "expected 7 fields"),
    ("ACGT  IIII IIII IIII ++++ -1.0\n", 1, "read bases (field 2) is empty"),
    ("ACGT ACGT IIII IIII IIII ++++ -1.0\nACGT ACGT III IIII IIII ++++ -1.0\n", 2,
     "read has 4 bases but 3 base qualities"),
    ("ACGT ACZT IIII IIII IIII ++++ -1.0\n", 1, "invalid base 'Z' at position 3 of read bases"),
    ("ACQT ACGT IIII IIII IIII ++++ -1.0\n", 1, "invalid base 'Q' at position 3 of haplotype"),
    ("ACGT ACGT IIII IIII II\x80I ++++ -1.0\n", 1, "deletion quality character byte 0x80"),
    ("ACGT ACGT IIII IIII IIII ++++ abc\n", 1, "expected result 'abc' is not a finite number"),
    ("ACGT ACGT IIII IIII IIII ++++ nan\n", 1, "not a finite number"),
])
def test_gatk_bad_input(tmp_path, text, where, message):
    path = write(tmp_path, "bad.txt", text)
    err = error_of(load_gatk, path)
    assert err.startswith(f"{path}:{where}: "), err
    assert message in err, err


def test_gatk_empty_field_is_named(tmp_path):
    path = write(tmp_path, "e.txt", "ACGT ACGT IIII IIII  ++++ -1.0\n")
    assert error_of(load_gatk, path) == f"{path}:1: deletion qualities (field 5) is empty"


# --- writers and round trips --------------------------------------------------------------------
@needs_data
@pytest.mark.parametrize("name", ["tiny.in", "10s.in", "1m.in"])
def test_block_text_round_trip_is_byte_identical(name):
    from hmmbench.pairhmm.datasets.blockfmt import format_block
    assert format_block(load_block(DATA / name)).encode() == (DATA / name).read_bytes()


@needs_data
@pytest.mark.parametrize("name", ["gkl-pairhmm-testdata.txt", "gatk-expected.Java.hmmresults.txt"])
def test_gatk_text_round_trip(name):
    from hmmbench.pairhmm.datasets.gatkfmt import format_gatk
    original = (DATA / name).read_text()
    assert format_gatk(load_gatk(DATA / name)).splitlines() == original.splitlines()


def test_crlf_line_ends_are_accepted(tmp_path):
    ps = load_block(write(tmp_path, "crlf.in", "1 2\r\n" + READ + "\r\nACGT\r\nACGG\r\n"))
    assert ps.n_pairs == 2 and ps.hap_lengths.tolist() == [4, 4]


@pytest.mark.parametrize("n_pairs, r, h", [(1, 5, 9), (16, 30, 12), (37, 12, 40), (100, 64, 64)])
def test_generated_sets_round_trip_through_both_formats(tmp_path, n_pairs, r, h):
    from hmmbench.pairhmm.datasets.blockfmt import format_block
    from hmmbench.pairhmm.datasets.gatkfmt import format_gatk
    from hmmbench.pairhmm.datasets.synthetic import generate_fixed
    ps = generate_fixed(r, h, n_pairs, seed=n_pairs)
    block = load_block(write(tmp_path, "g.in", format_block(ps)))
    for a in ("read_bases", "read_offsets", "base_qual", "ins_qual", "del_qual", "gcp_qual",
              "hap_bases", "hap_offsets", "batch_reads", "batch_haps"):
        np.testing.assert_array_equal(getattr(block, a), getattr(ps, a))
    values = -np.arange(n_pairs, dtype=np.float64) / 7
    gatk = load_gatk(write(tmp_path, "g.txt", format_gatk(ps, results=values)))
    assert gatk.n_pairs == n_pairs
    np.testing.assert_allclose(gatk.expected, values, rtol=1e-6)
    # Pairs line up one to one (batches may be regrouped: a lone read's haplotypes stay apart).
    for p in range(n_pairs):
        np.testing.assert_array_equal(gatk.read(gatk.pair_read[p]), ps.read(ps.pair_read[p]))
        np.testing.assert_array_equal(gatk.hap(gatk.pair_hap[p]), ps.hap(ps.pair_hap[p]))
    full = (n_pairs // 16) * 16
    assert list(np.diff(gatk.batch_pairs))[:n_pairs // 16] == [16] * (n_pairs // 16) or full == 0
