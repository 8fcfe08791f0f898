"""Seeded synthetic Pair-HMM sets: the papers' fixed-shape tables and any equal/fixed shape.

Names (``NAME[@PAIRS][:seed=S]``)
---------------------------------
``ren16-t1.K``   Ren et al. 2016, Table I, K = 1..8 (read x haplotype: 27x32, 60x64, 96x96,
                 101x128, 101x160, 101x192, 101x224, 128x256)
``ren18-t1.K``   Ren et al. 2018, Table 1, K = 1..6 (equal lengths 24, 48, 72, 96, 120, 144)
``ren18-t3.K``   Ren et al. 2018, Table 3, K = 1..26 (R in 32, 64, 96, 128; H from R to 256,
                 step 32)
``equal-L``      reads and haplotypes of length L (peak-throughput runs), 1 <= L <= 4096
``shape-RxH``    reads of length R, haplotypes of length H, 1 <= R, H <= 4096

``@PAIRS`` is the exact number of pairs: an integer (``10000``) or integral scientific form
(``1e6``, ``2.5e5``); default 1000 (small enough for the CPU reference). The papers use 10^6, and
100/1000/10000 for the small-count study. ``:seed=S`` picks another seed (default 1).
Examples: ``ren18-t3.26@1e6``, ``equal-256@1e5:seed=7``.

Layout: pairs come in batches of 4 reads x 4 haplotypes (16 pairs, a small active region); when
PAIRS is not a multiple of 16, the last batch is 1 read x (PAIRS mod 16) haplotypes. The papers
run these sets as one launch of independent pairs, so their Dataset says
``default_chunking='merged'``.

Sequences: each batch draws a random reference; its first haplotype is that reference, the other
haplotypes carry substitutions (1 % per base, at least one). Each read copies a random window of
one of its batch's haplotypes, with one insertion or deletion in 3 % of reads and sequencing
errors drawn from its own base qualities (error probability 10^(-q/10)), plus N at 0.01 % -- so
likelihoods look like real ones. Reads longer than their haplotype get random flanking bases.

Qualities follow the shape of the real 1m.in data: base qualities mostly 27-34 with a mode at 20
and a low tail (Q6 2 %); insertion/deletion qualities mostly 40 ('I') with tails 33-39 and
41-45 ('J'-'N'); gap continuation 10 ('+').

Reproducibility: every random number comes from ``Generator(PCG64(SeedSequence(...))).random``
(float64/float32 uniforms) and is turned into values with explicit dtypes by this module's own
arithmetic, so the same name and seed give the same bytes across NumPy versions.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Optional

import numpy as np

from ...errors import UserError
from ...memory import available_memory
from ..model import PHRED_ERROR, PairSet, ranges
from ...dataset import Dataset

GENERATOR_VERSION = 2
DEFAULT_PAIRS = 1000
DEFAULT_SEED = 1
MAX_LENGTH = 4096
READS_PER_BATCH = 4
HAPS_PER_BATCH = 4

REN16_T1 = [(27, 32), (60, 64), (96, 96), (101, 128), (101, 160), (101, 192), (101, 224),
            (128, 256)]
REN18_T1 = [(n, n) for n in (24, 48, 72, 96, 120, 144)]
REN18_T3 = [(r, h) for r in (32, 64, 96, 128) for h in range(r, 257, 32)]
TABLES = {
    "ren16-t1": ("Ren et al. 2016 Table I", REN16_T1),
    "ren18-t1": ("Ren et al. 2018 Table 1", REN18_T1),
    "ren18-t3": ("Ren et al. 2018 Table 3", REN18_T3),
}

# --- quality distributions (probability per Phred value) -----------------------------------------
LUT_SIZE = 1 << 16


def _pmf(weights: dict) -> np.ndarray:
    """Lookup table for inverse-CDF sampling: entry i is the value at quantile (i + 0.5) / 2^16."""
    values = np.array(sorted(weights), dtype=np.uint8)
    p = np.array([weights[v] for v in sorted(weights)], dtype=np.float64)
    cdf = np.cumsum(p / p.sum())
    quantiles = (np.arange(LUT_SIZE, dtype=np.float64) + 0.5) / LUT_SIZE
    return values[np.minimum(np.searchsorted(cdf, quantiles, side="right"), len(values) - 1)]


def _spread(lo: int, hi: int, total: float) -> dict:
    return {q: total / (hi - lo + 1) for q in range(lo, hi + 1)}


BASE_QUAL = _pmf({6: 2.0, **_spread(10, 19, 1.0), 20: 20.0, **_spread(21, 26, 5.0),
                  27: 2.0, 28: 4.5, 29: 13.0, 30: 19.5, 31: 13.0, 32: 12.5, 33: 6.0, 34: 1.0,
                  **_spread(35, 40, 0.5)})
INDEL_QUAL = _pmf({**_spread(33, 39, 17.0), 40: 79.0, **_spread(41, 45, 4.0)})
GCP_QUAL = 10

HAP_VARIANT_RATE = 0.01
READ_INDEL_RATE = 0.03
READ_N_RATE = 1e-4


def _sample(u: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling through a 2^16-entry lookup table (u in [0, 1))."""
    return table[(u * LUT_SIZE).astype(np.int32)]


def _bases(u: np.ndarray) -> np.ndarray:
    return np.minimum((u * 4).astype(np.uint8), 3)


def _substitute(old: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A different base than ``old`` (codes 0..3), uniformly among the other three."""
    return ((old.astype(np.int64) + 1 + np.minimum((u * 3).astype(np.int64), 2)) % 4).astype(
        np.uint8)


def rng_for(*key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(key))))


def simulate(rng: np.random.Generator, reads_per_batch, haps_per_batch, read_lengths,
             hap_lengths) -> PairSet:
    """Generate sequences and qualities for a given layout (vectorized).

    ``reads_per_batch``/``haps_per_batch`` give each batch's shape; ``read_lengths`` and
    ``hap_lengths`` give every read and haplotype in batch order. Draw order is fixed.
    """
    rpb = np.asarray(reads_per_batch, dtype=np.int64)
    hpb = np.asarray(haps_per_batch, dtype=np.int64)
    rlen = np.asarray(read_lengths, dtype=np.int64)
    hlen = np.asarray(hap_lengths, dtype=np.int64)
    n_batches, n_reads, n_haps = len(rpb), len(rlen), len(hlen)
    batch_reads = np.zeros(n_batches + 1, np.int64)
    np.cumsum(rpb, out=batch_reads[1:])
    batch_haps = np.zeros(n_batches + 1, np.int64)
    np.cumsum(hpb, out=batch_haps[1:])
    hap_offsets = np.zeros(n_haps + 1, np.int64)
    np.cumsum(hlen, out=hap_offsets[1:])
    read_offsets = np.zeros(n_reads + 1, np.int64)
    np.cumsum(rlen, out=read_offsets[1:])

    # Haplotypes: a reference per batch; haplotype k > 0 of a batch carries substitutions.
    hap_batch = np.repeat(np.arange(n_batches), hpb)
    ref_len = np.maximum.reduceat(hlen, batch_haps[:-1]) if n_batches else np.zeros(0, np.int64)
    ref_offsets = np.zeros(n_batches + 1, np.int64)
    np.cumsum(ref_len, out=ref_offsets[1:])
    ref = _bases(rng.random(int(ref_offsets[-1]), dtype=np.float32))
    hap_bases = ref[ranges(ref_offsets[:-1][hap_batch], hlen)]
    alt_hap = (np.arange(n_haps) - batch_haps[:-1][hap_batch]) > 0
    u = rng.random(len(hap_bases), dtype=np.float32)
    variant = (u < HAP_VARIANT_RATE) & np.repeat(alt_hap, hlen)
    # Every alternative haplotype differs from the reference somewhere (GATK's are distinct).
    forced = hap_offsets[:-1] + np.minimum((rng.random(n_haps) * hlen).astype(np.int64), hlen - 1)
    variant[forced[alt_hap]] = True
    u[forced[alt_hap]] = rng.random(int(alt_hap.sum())) * HAP_VARIANT_RATE
    hap_bases[variant] = _substitute(hap_bases[variant], u[variant] / HAP_VARIANT_RATE)

    # Reads: a window of a random haplotype of the batch, maybe with one indel.
    read_batch = np.repeat(np.arange(n_batches), rpb)
    source = batch_haps[:-1][read_batch] + np.minimum(
        (rng.random(n_reads) * hpb[read_batch]).astype(np.int64), hpb[read_batch] - 1)
    src_len = hlen[source]
    span = src_len - rlen
    u_start = rng.random(n_reads)
    start = np.where(span >= 0, np.minimum((u_start * (span + 1)).astype(np.int64),
                                           np.maximum(span, 0)), span // 2)
    u_indel = rng.random(n_reads)
    shift = np.where(u_indel < READ_INDEL_RATE / 2, 1,                  # deletion
                     np.where(u_indel < READ_INDEL_RATE, -1, 0))        # insertion
    indel_at = 1 + (rng.random(n_reads) * np.maximum(rlen - 1, 1)).astype(np.int64)

    n_pos = int(read_offsets[-1])
    # Plain reads: position p of read r copies hap base hap_offsets[source[r]] + start[r] + j.
    copy_from = hap_offsets[:-1][source] + start - read_offsets[:-1]
    src = np.repeat(copy_from, rlen) + np.arange(n_pos, dtype=np.int64)
    # Reads with an indel or sticking out of their haplotype: redo their positions in full.
    special = np.flatnonzero((shift != 0) | (span < 0) | (start + rlen + (shift > 0) > src_len))
    pos = ranges(read_offsets[:-1][special], rlen[special])
    pos_read = np.repeat(special, rlen[special])
    j = pos - read_offsets[:-1][pos_read]
    after = j >= indel_at[pos_read]
    local = start[pos_read] + j + np.where(after, shift[pos_read], 0)
    inserted = after & (j == indel_at[pos_read]) & (shift[pos_read] < 0)
    outside = (local < 0) | (local >= src_len[pos_read]) | inserted
    src[pos] = hap_offsets[:-1][source][pos_read] + np.clip(local, 0, src_len[pos_read] - 1)
    read_bases = hap_bases[src] if n_haps else np.zeros(n_pos, np.uint8)
    u = rng.random(len(pos), dtype=np.float32)
    read_bases[pos[outside]] = _bases(u[outside])

    base_qual = _sample(rng.random(n_pos, dtype=np.float32), BASE_QUAL)
    ins_qual = _sample(rng.random(n_pos, dtype=np.float32), INDEL_QUAL)
    del_qual = _sample(rng.random(n_pos, dtype=np.float32), INDEL_QUAL)
    gcp_qual = np.full(n_pos, GCP_QUAL, dtype=np.uint8)

    # Sequencing errors at the rate the base quality claims, then a few N calls.
    u = rng.random(n_pos, dtype=np.float32)
    err = PHRED_ERROR[base_qual]
    wrong = np.flatnonzero((u < err) & (read_bases < 4))
    read_bases[wrong] = _substitute(read_bases[wrong], u[wrong] / err[wrong])
    read_bases[rng.random(n_pos, dtype=np.float32) < READ_N_RATE] = 4

    return PairSet(read_bases=read_bases, read_offsets=read_offsets, base_qual=base_qual,
                   ins_qual=ins_qual, del_qual=del_qual, gcp_qual=gcp_qual,
                   hap_bases=hap_bases, hap_offsets=hap_offsets, batch_reads=batch_reads,
                   batch_haps=batch_haps)


def fixed_shape_layout(n_pairs: int):
    """(reads_per_batch, haps_per_batch) with exactly n_pairs pairs (see module docstring)."""
    per = READS_PER_BATCH * HAPS_PER_BATCH
    full, rem = divmod(n_pairs, per)
    rpb = np.full(full, READS_PER_BATCH, np.int64)
    hpb = np.full(full, HAPS_PER_BATCH, np.int64)
    if rem:
        rpb = np.append(rpb, 1)
        hpb = np.append(hpb, rem)
    return rpb, hpb


def generate_fixed(read_length: int, hap_length: int, n_pairs: int, seed: int) -> PairSet:
    rpb, hpb = fixed_shape_layout(n_pairs)
    rng = rng_for(seed, GENERATOR_VERSION, read_length, hap_length, n_pairs)
    return simulate(rng, rpb, hpb, np.full(int(rpb.sum()), read_length, np.int64),
                    np.full(int(hpb.sum()), hap_length, np.int64))


# --- names ---------------------------------------------------------------------------------------
_SUFFIX = re.compile(r"^(?P<base>[^@:]+)(?:@(?P<pairs>[^:]+))?(?::seed=(?P<seed>\d+))?$")


#: Most pairs a name may ask for (a lazy chunk set of 1e9 pairs is ~18x NA12878).
MAX_PAIRS = 10 ** 9
#: Most memory a generated (eager) set may take; bigger ones are the lazy ``chunks`` sets' job.
MAX_SYNTHETIC_BYTES = 16 << 30


def parse_count(text: str, what: str = "pair count", maximum: int = MAX_PAIRS) -> int:
    """'10000', '1e6', '2.5e5' -> int; anything else (< 1, > maximum) is a UserError."""
    try:
        value = int(text) if re.fullmatch(r"\d+", text) else float(text)
    except ValueError:
        raise UserError(f"{what} '{text}' is not a number (use e.g. 1000 or 1e6)") from None
    if isinstance(value, float) and (not np.isfinite(value) or value != int(value)):
        raise UserError(f"{what} '{text}' is not a whole number")
    if int(value) < 1:
        raise UserError(f"{what} '{text}' must be at least 1")
    if int(value) > maximum:
        raise UserError(f"{what} '{text}' is more than the most allowed, {format_count(maximum)}")
    return int(value)


#: Bytes :func:`simulate` holds at its peak, per haplotype base while it draws the haplotypes
#: (float32 uniforms, int64 gather indices, masks), per read base while it draws the reads
#: (int64 source indices, float32 uniforms, qualities; more when every read needs the slow path
#: because it is longer than its haplotype), and per pair (the per-read and per-haplotype index
#: arrays). Fitted to the peak resident memory measured on shapes from 1x1 to 4096x4096
#: (tests/core/test_hostile_memory.py re-measures it), with a tenth added so that it errs high.
HAP_PHASE_BYTES, READ_PHASE_HAP_BYTES = 16, 1
READ_PHASE_BYTES, READ_PHASE_BYTES_LONG = 33, 68
PAIR_BYTES = (40, 30, 100)
ESTIMATE_MARGIN = 1.1


def synthetic_bytes(read_length: int, hap_length: int, n_pairs: int) -> int:
    """About the most memory generating the set takes (its peak, not only the arrays kept):
    within 1.5x of the measured peak for every shape (see the constants above)."""
    full, rem = divmod(n_pairs, READS_PER_BATCH * HAPS_PER_BATCH)
    n_reads = READS_PER_BATCH * full + (1 if rem else 0)
    n_haps = HAPS_PER_BATCH * full + rem
    return simulate_bytes(n_reads * read_length, n_haps * hap_length, n_pairs,
                          long_reads=read_length > hap_length)


def simulate_bytes(read_bases: int, hap_bases: int, n_pairs: int,
                   long_reads: bool = False) -> int:
    """About the peak of one :func:`simulate` call of these sizes (``long_reads``: reads
    longer than their haplotypes, which take the slow path)."""
    per_read = READ_PHASE_BYTES_LONG if long_reads else READ_PHASE_BYTES
    peak = max(HAP_PHASE_BYTES * hap_bases + PAIR_BYTES[0] * n_pairs,
               READ_PHASE_HAP_BYTES * hap_bases + per_read * read_bases
               + PAIR_BYTES[1] * n_pairs,
               PAIR_BYTES[2] * n_pairs)
    return int(peak * ESTIMATE_MARGIN)


def memory_limit() -> tuple:
    """(bytes, why): the most a generated set may take -- MAX_SYNTHETIC_BYTES, or the memory
    available now (Linux's MemAvailable) when that is less."""
    available = _available_memory()
    if available is not None and available < MAX_SYNTHETIC_BYTES:
        return available, f"the memory available now, {available / 2**30:.1f} GiB"
    return MAX_SYNTHETIC_BYTES, f"hmmbench's cap on generated sets, {MAX_SYNTHETIC_BYTES >> 30} GiB"


def _available_memory() -> Optional[int]:
    return available_memory()


def format_count(n: int) -> str:
    """1000000 -> '1e6', 250000 -> '250000' (names stay short and round-trip)."""
    k = len(str(n)) - 1
    return f"1e{k}" if n == 10 ** k and k >= 4 else str(n)


def split_name(name: str):
    """'base@pairs:seed=S' -> (base, pairs or None, seed or None)."""
    m = _SUFFIX.match(name.strip())
    if not m:
        return name, None, None
    pairs = parse_count(m["pairs"]) if m["pairs"] else None
    seed = int(m["seed"]) if m["seed"] else None
    return m["base"], pairs, seed


def join_name(base: str, pairs: Optional[int], default_pairs: int, seed: int) -> str:
    name = base if pairs in (None, default_pairs) else f"{base}@{format_count(pairs)}"
    return name if seed == DEFAULT_SEED else f"{name}:seed={seed}"


def shape_of(base: str) -> Optional[tuple[int, int, str]]:
    """(read length, hap length, description) for a synthetic base name, or None."""
    m = re.fullmatch(r"(ren16-t1|ren18-t1|ren18-t3)\.(\d+)", base)
    if m:
        title, shapes = TABLES[m[1]]
        k = int(m[2])
        if not 1 <= k <= len(shapes):
            raise UserError(f"{m[1]} has data sets 1..{len(shapes)}, not {k}")
        r, h = shapes[k - 1]
        return r, h, f"{title}, data set {k}"
    m = re.fullmatch(r"equal-(\d+)", base)
    if m:
        r = h = int(m[1])
        desc = "equal read and haplotype lengths (peak runs)"
    else:
        m = re.fullmatch(r"shape-(\d+)x(\d+)", base)
        if not m:
            return None
        r, h = int(m[1]), int(m[2])
        desc = "fixed read x haplotype shape"
    if not (1 <= r <= MAX_LENGTH and 1 <= h <= MAX_LENGTH):
        raise UserError(f"lengths in '{base}' must be between 1 and {MAX_LENGTH}")
    return r, h, desc


def params_sha256(kind: str, base: str, params: dict, seed: int) -> str:
    canonical = json.dumps({"generator": f"hmmbench.{kind}", "version": GENERATOR_VERSION,
                            "name": base, "params": params, "seed": seed},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def synthetic_dataset(name: str) -> Optional[Dataset]:
    """The Dataset for a synthetic name (nothing generated until load()), or None."""
    base, pairs, seed = split_name(name)
    shape = shape_of(base)
    if shape is None:
        return None
    r, h, desc = shape
    pairs = DEFAULT_PAIRS if pairs is None else pairs
    need = synthetic_bytes(r, h, pairs)
    limit, why = memory_limit()
    if need > limit:
        raise UserError(f"dataset '{name}': generating it takes about {need / 2**30:.1f} GiB of "
                        f"memory (estimate), more than the limit, {why}: ask for fewer pairs, "
                        f"or use the lazy 'chunks@PAIRS' sets")
    seed = DEFAULT_SEED if seed is None else seed
    params = {"read_length": r, "hap_length": h, "pairs": pairs,
              "reads_per_batch": READS_PER_BATCH, "haps_per_batch": HAPS_PER_BATCH}
    return Dataset(
        name=join_name(base, pairs, DEFAULT_PAIRS, seed), kind="synthetic",
        description=(f"{desc}: {pairs} pairs of read {r} x haplotype {h}, batches of "
                     f"{READS_PER_BATCH} reads x {HAPS_PER_BATCH} haplotypes, seed {seed}"),
        sha256=params_sha256("synthetic", base, params, seed),
        loader=lambda: generate_fixed(r, h, pairs, seed),
        n_pairs=pairs, n_cells=pairs * r * h, params={**params, "seed": seed},
        default_chunking="merged")


def table_names() -> list[str]:
    return [f"{t}.{k}" for t, (_, shapes) in TABLES.items() for k in range(1, len(shapes) + 1)]
