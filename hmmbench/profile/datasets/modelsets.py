"""Seeded many-model files: ``models-mixed<N>[:seed]``, N calibrated family models of mixed
sizes (M log-uniform over 50..2000, both ends included), written once as a HMMER3 file in the
user cache and read back like any HMM file (a Pfam-like search in one ``--model``).

Each model is a family, not a single sequence: pyhmmer samples an ungapped random HMM of the
drawn length (``HMM.sample``), emits an alignment of ``FAMILY_SEQS`` sequences from it and
builds the model from that alignment with its Builder (HMMER's priors, effective-number
weighting and E-value calibration, as ``hmmbuild``), so the filters' P-value thresholds apply.
The same name gives the same file on every machine (Easel's seeded generator, the model seeds
drawn from the set's seed); the cache entry is named by the generator's parameters.
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ...cachedir import entry_lock, user_cache_dir
from ...errors import UserError
from ...fileio import atomic_open
from .files import sha256_of_params

#: models-mixed<N>[:seed]
MODEL_SET_PATTERN = re.compile(r"^models-mixed(\d+)(?::(\d+))?$")
MODEL_SET_PATTERNS = ("models-mixed<N>[:seed]",)
#: the sizes' range (log-uniform between, the first model the smallest, the second the largest)
MIXED_M = (50, 2000)
#: sequences emitted per family (the alignment the model is built from)
FAMILY_SEQS = 10
MAX_MODELS = 20_000
#: bump when the generated models change (it names the cache entry)
GENERATOR = "models-mixed/1 pyhmmer-0.12"


def mixed_lengths(n: int, seed: int, lo: int = MIXED_M[0], hi: int = MIXED_M[1]) -> np.ndarray:
    """The N model sizes: log-uniform over lo..hi, the first lo and the second hi (N >= 2)."""
    rng = np.random.default_rng([seed, n])
    M = np.rint(np.exp(rng.uniform(np.log(lo), np.log(hi), n))).astype(np.int64)
    M[:2] = (lo, hi)[:n]
    return np.clip(M, lo, hi)


def family_hmm(M: int, seed: int, name: str):
    """A calibrated model of a family of ``M`` columns (see the module's docstring)."""
    import pyhmmer  # optional dependency, imported on first use
    abc = pyhmmer.easel.Alphabet.amino()
    rng = pyhmmer.easel.Randomness(seed)
    msa = pyhmmer.plan7.HMM.sample(abc, int(M), rng, ungapped=True).emit_alignment(FAMILY_SEQS,
                                                                                  rng)
    msa.name = name.encode()
    hmm = pyhmmer.plan7.Builder(abc, seed=seed).build_msa(msa, pyhmmer.plan7.Background(abc))[0]
    hmm.name = name.encode()
    return hmm


def model_set_params(n: int, seed: int) -> dict:
    return {"models": n, "seed": seed, "M": list(MIXED_M), "family_seqs": FAMILY_SEQS,
            "generator": GENERATOR}


def parse_model_set(name: str):
    """(N, seed) of a ``models-mixed<N>[:seed]`` name, None for other names."""
    m = MODEL_SET_PATTERN.match(name)
    if not m:
        return None
    n, seed = int(m.group(1)), int(m.group(2) or 1)
    if not 1 <= n <= MAX_MODELS:
        raise UserError(f"model set '{name}': between 1 and {MAX_MODELS} models")
    if seed < 1:
        raise UserError(f"model set '{name}': seed must be at least 1")
    return n, seed


def model_set_file(name: str, threads: int = 0) -> Path:
    """The HMMER3 file of the model set ``name`` (``models-mixed100``), generated on first use
    into ``<user cache>/models/<digest>/<name>.hmm`` (under a lock: one process generates, the
    others wait for it; the file appears whole or not at all). ``threads``: models built at once
    (default: every core)."""
    n, seed = parse_model_set(name)
    digest = sha256_of_params(model_set_params(n, seed))[:16]
    canonical = f"models-mixed{n}" + (f":{seed}" if seed != 1 else "")
    path = user_cache_dir() / "models" / digest / f"{canonical}.hmm"   # the stem names the models
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with entry_lock(path):
        if path.exists():
            return path
        lengths = mixed_lengths(n, seed)
        seeds = np.random.default_rng([seed, n, 1]).integers(1, 2**31 - 1, n)
        names = [f"mixed{i + 1:0{len(str(n))}d}-M{M}" for i, M in enumerate(lengths)]
        with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:
            hmms = list(pool.map(family_hmm, lengths, seeds, names))
        with atomic_open(path, binary=True) as fh:
            for hmm in hmms:
                hmm.write(fh)
    return path
