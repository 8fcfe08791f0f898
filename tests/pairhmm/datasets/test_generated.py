"""Synthetic tables, the chunk generator and chunking modes."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hmmbench.pairhmm.datasets import chunks as ch
from hmmbench.pairhmm.datasets.chunking import launch_bounds, launches, parse_mode
from hmmbench.pairhmm.datasets.synthetic import (REN16_T1, REN18_T1, REN18_T3, generate_fixed,
                                         split_name, synthetic_dataset)
from hmmbench.errors import UserError
from hmmbench.pairhmm.model import PairSet

ARRAYS = ("read_bases", "read_offsets", "base_qual", "ins_qual", "del_qual", "gcp_qual",
          "hap_bases", "hap_offsets", "batch_reads", "batch_haps")


def digest(ps: PairSet) -> str:
    h = hashlib.sha256()
    for a in ARRAYS:
        arr = getattr(ps, a)
        h.update(a.encode() + str(arr.dtype).encode() + arr.tobytes())
    return h.hexdigest()


def same_pairs(a: PairSet, b: PairSet):
    for name in ARRAYS[:8]:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(a.pair_read_lengths, b.pair_read_lengths)
    np.testing.assert_array_equal(a.pair_hap_lengths, b.pair_hap_lengths)


# --- synthetic ---------------------------------------------------------------------------------
def test_table_shapes_match_the_papers():
    assert REN16_T1 == [(27, 32), (60, 64), (96, 96), (101, 128), (101, 160), (101, 192),
                        (101, 224), (128, 256)]
    assert REN18_T1 == [(24, 24), (48, 48), (72, 72), (96, 96), (120, 120), (144, 144)]
    assert len(REN18_T3) == 26
    assert REN18_T3[0] == (32, 32) and REN18_T3[7] == (32, 256) and REN18_T3[8] == (64, 64)
    assert REN18_T3[15] == (96, 96) and REN18_T3[20] == (96, 256)
    assert REN18_T3[21] == (128, 128) and REN18_T3[25] == (128, 256)


@pytest.mark.parametrize("name, r, h, pairs", [
    ("ren16-t1.1", 27, 32, 1000), ("ren16-t1.8@100", 128, 256, 100),
    ("ren18-t1.6@1e4", 144, 144, 10_000), ("ren18-t3.13@37", 64, 192, 37),
    ("ren18-t3.26@2.5e2", 128, 256, 250), ("equal-256@33", 256, 256, 33),
    ("shape-150x40@5", 150, 40, 5),
])
def test_synthetic_shapes_and_exact_pair_counts(name, r, h, pairs):
    ds = synthetic_dataset(name)
    assert ds.kind == "synthetic" and ds.n_pairs == pairs and ds.n_cells == pairs * r * h
    ps = ds.load()
    assert ps.n_pairs == pairs and ps.cells == pairs * r * h
    assert set(ps.pair_read_lengths) == {r} and set(ps.pair_hap_lengths) == {h}
    assert ps.read_bases.max() <= 4 and ps.hap_bases.max() <= 3
    # Batches of 4 reads x 4 haplotypes, the remainder as one read x (pairs mod 16) haplotypes.
    shapes = set(zip(np.diff(ps.batch_reads), np.diff(ps.batch_haps)))
    assert shapes <= {(4, 4)} | ({(1, pairs % 16)} if pairs % 16 else set())


def test_synthetic_is_reproducible_and_seeded():
    a, b = synthetic_dataset("ren18-t3.5@500").load(), synthetic_dataset("ren18-t3.5@500").load()
    assert digest(a) == digest(b)
    other = synthetic_dataset("ren18-t3.5@500:seed=2")
    assert digest(other.load()) != digest(a)
    assert other.sha256 != synthetic_dataset("ren18-t3.5@500").sha256
    assert synthetic_dataset("ren18-t3.5@500").sha256 == synthetic_dataset("ren18-t3.5@5e2").sha256


def test_synthetic_bytes_are_pinned():
    # Same name and seed -> same bytes on every platform and NumPy version (a change here means
    # the generator changed: bump GENERATOR_VERSION).
    assert digest(generate_fixed(24, 24, 20, 1)) == \
        "db8612f3b618db4793b3f79a4344f518554444c6f83d19ab038f022b01245196"


def test_synthetic_qualities_and_reads_are_realistic():
    ps = generate_fixed(101, 128, 4000, 1)
    bq = ps.base_qual
    assert 0.75 < np.mean((bq >= 20) & (bq <= 40)) < 0.99 and bq.min() >= 2
    assert np.mean(ps.ins_qual == 40) > 0.7 and ps.ins_qual.min() >= 33 and ps.ins_qual.max() <= 45
    assert np.all(ps.gcp_qual == 10)
    # Reads are copies of haplotype windows: most bases match the best window of some haplotype.
    r = ps.pair_read[0]
    read = ps.read(r)
    best = max(np.mean(ps.hap(hp)[s:s + len(read)] == read)
               for hp in range(ps.batch_haps[0], ps.batch_haps[1])
               for s in range(len(ps.hap(hp)) - len(read) + 1))
    assert best > 0.85


@pytest.mark.parametrize("bad", ["ren18-t3.27", "ren16-t1.0", "equal-0", "shape-5000x10",
                                 "equal-64@0", "equal-64@abc", "equal-64@1.5"])
def test_synthetic_bad_names(bad):
    with pytest.raises(UserError):
        synthetic_dataset(bad)


def test_name_suffixes():
    assert split_name("ren18-t3.26@1e6:seed=7") == ("ren18-t3.26", 1_000_000, 7)
    assert split_name("equal-64") == ("equal-64", None, None)
    assert synthetic_dataset("equal-64@1e6").name == "equal-64@1e6"
    assert synthetic_dataset("equal-64@1000").name == "equal-64"
    assert synthetic_dataset("equal-64@100:seed=3").name == "equal-64@100:seed=3"
    assert synthetic_dataset("nothing-here") is None


# --- chunk generator ----------------------------------------------------------------------------
def test_chunk_plan_statistics():
    plan = ch.make_plan(300_000, seed=1)
    sizes = plan.chunk_pairs
    assert plan.n_pairs == 300_000
    assert sizes.min() >= ch.MIN_CHUNK and sizes.max() <= ch.MAX_CHUNK
    assert 0.78 < np.mean(sizes < 200) < 0.86
    rl, hl = plan.read_lengths, plan.hap_lengths
    assert rl.min() >= 10 and rl.max() <= 151 and 56 < rl.mean() < 60
    assert hl.min() >= 30 and hl.max() <= 521


@pytest.mark.parametrize("n", [1, 3, 5, 17, 1000, 12_345])
def test_chunk_plan_pair_count_is_exact(n):
    assert ch.make_plan(n).n_pairs == n


def test_chunk_set_generation_matches_its_plan():
    ds = ch.chunks_dataset("chunks@5000")
    assert not ds.lazy and ds.n_pairs == 5000
    ps = ds.load()
    assert ps.n_pairs == 5000 and ps.cells == ds.n_cells
    np.testing.assert_array_equal(np.diff(ps.batch_pairs), ds.plan.chunk_pairs)
    np.testing.assert_array_equal(ps.read_lengths, ds.plan.read_lengths)
    # Pieces (lazy path) give the same pairs as the whole set, in order.
    pieces = list(ch.iter_pieces(ds.plan, 1, piece_pairs=1500))
    assert len(pieces) > 1
    np.testing.assert_array_equal(np.concatenate([p.read_lengths for p in pieces]),
                                  ps.read_lengths)
    assert sum(p.n_pairs for p in pieces) == 5000


def test_chunk_set_reproducible():
    a = ch.chunks_dataset("chunks@800:seed=4").load()
    b = ch.chunks_dataset("chunks@800:seed=4").load()
    assert digest(a) == digest(b)


def test_na12878_is_lazy_and_sized_without_generating(monkeypatch):
    def no_bases(*args, **kw):
        raise AssertionError("bases generated")
    monkeypatch.setattr(ch, "simulate", no_bases)
    ds = ch.chunks_dataset("chunks-na12878")
    assert ds.lazy and ds.loader is None and ds.chunk_loader is not None
    assert ds.n_pairs == 55_125_211 and ds._plan is None      # known before any drawing
    assert ds.plan.n_pairs == 55_125_211
    assert 1.0e12 < ds.n_cells < 1.5e12                        # ~23,000 cells per pair
    assert len(ds.plan.pieces()) >= 20


# --- chunking modes -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chunk_set():
    return ch.chunks_dataset("chunks@3000:seed=2").load()


@pytest.mark.parametrize("mode", ["original", "merged", "merged:1", "merged:500", "merged:1e3",
                                  "merged:1000000"])
def test_chunking_modes_preserve_pair_order(chunk_set, mode):
    parts = launches(chunk_set, mode)
    joined = PairSet.concatenate(parts)
    same_pairs(joined, chunk_set)
    if mode == "original":
        assert len(parts) == chunk_set.n_batches
    elif mode in ("merged", "merged:1000000"):
        assert len(parts) == 1
    for p in parts:
        assert p.n_batches >= 1


def test_merged_n_launch_sizes(chunk_set):
    bounds = launch_bounds(chunk_set, "merged:500")
    starts = chunk_set.batch_pairs[[a for a, _ in bounds]]
    assert np.all(np.diff(starts // 500) > 0)    # each launch starts in a new 500-pair window
    sizes = [int(chunk_set.batch_pairs[b] - chunk_set.batch_pairs[a]) for a, b in bounds]
    assert sum(sizes) == chunk_set.n_pairs
    biggest_batch = int(np.diff(chunk_set.batch_pairs).max())
    assert max(sizes) < 500 + biggest_batch


@pytest.mark.parametrize("bad", ["", "split", "merged:", "merged:0", "merged:-5", "merged:x",
                                 "original:3"])
def test_bad_chunking_modes(bad):
    with pytest.raises(UserError, match="chunking mode|launch size"):
        parse_mode(bad)


def test_synthetic_sets_prefer_one_launch():
    assert synthetic_dataset("ren18-t1.1").default_chunking == "merged"
    assert ch.chunks_dataset("chunks@100").default_chunking is None   # per-region launches
