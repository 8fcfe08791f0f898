"""Seeded many-model files: ``models-mixed<N>[:seed]``, N calibrated family models of mixed
sizes (M log-uniform over 50..2000, both ends included), written once as a HMMER3 file in the
user cache and read back like any HMM file (a Pfam-like search in one ``--model``).

Each model is a family, not a single sequence: pyhmmer samples an ungapped random HMM of the
drawn length (``HMM.sample``), emits an alignment of ``FAMILY_SEQS`` sequences from it and
builds the model from that alignment with its Builder (HMMER's priors, effective-number
weighting and E-value calibration, as ``hmmbuild``), so the filters' P-value thresholds apply.
The same name gives the same bytes on every machine (Easel's seeded generator, the model seeds
drawn from the set's seed, the Builder's calibration seeded too; the written numbers matched
across CPUs, NumPy and Python versions), and the file holds nothing of the machine or the moment:
the ``DATE`` (build time) and ``COM`` (the building process's command line) lines that HMMER's
builder stamps on each model are left out, as the set's identity is its file's sha256. The cache
entry is named by the generator's parameters.

A set resolves without being generated (:func:`model_set_specs`): each model's name and M follow
from the parameters, so a run is planned (its cells, their shapes and memory) before the models
are built; the file is generated when a model's identity (sha256, the file's digest as for any HMM
file) or HMM is first needed.
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
from .models import KEEP_PROFILES, ModelSpec, file_models

#: models-mixed<N>[:seed]
MODEL_SET_PATTERN = re.compile(r"^models-mixed(\d+)(?::(\d+))?$")
MODEL_SET_PATTERNS = ("models-mixed<N>[:seed]",)
#: the sizes' range (log-uniform between, the first model the smallest, the second the largest)
MIXED_M = (50, 2000)
#: sequences emitted per family (the alignment the model is built from)
FAMILY_SEQS = 10
MAX_MODELS = 20_000
#: bump when the generated models change (it names the cache entry)
GENERATOR = "models-mixed/2 pyhmmer-0.12"


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
    # the builder stamps the time and sys.argv (DATE, COM): the same set must be the same bytes
    hmm.creation_time = hmm.command_line = None
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


def canonical_name(n: int, seed: int) -> str:
    """The set's name as its file is named (the stem its models are addressed by)."""
    return f"models-mixed{n}" + (f":{seed}" if seed != 1 else "")


def model_names(n: int, seed: int) -> list:
    """The N models' names, in file order (each names its size)."""
    return [f"mixed{i + 1:0{len(str(n))}d}-M{M}" for i, M in enumerate(mixed_lengths(n, seed))]


def model_set_file(name: str, threads: int = 0) -> Path:
    """The HMMER3 file of the model set ``name`` (``models-mixed100``), generated on first use
    into ``<user cache>/models/<digest>/<name>.hmm`` (under a lock: one process generates, the
    others wait for it; the file appears whole or not at all). ``threads``: models built at once
    (default: every core)."""
    n, seed = parse_model_set(name)
    digest = sha256_of_params(model_set_params(n, seed))[:16]
    canonical = canonical_name(n, seed)
    path = user_cache_dir() / "models" / digest / f"{canonical}.hmm"   # the stem names the models
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with entry_lock(path):
        if path.exists():
            return path
        lengths = mixed_lengths(n, seed)
        seeds = np.random.default_rng([seed, n, 1]).integers(1, 2**31 - 1, n)
        names = model_names(n, seed)
        with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:
            hmms = list(pool.map(family_hmm, lengths, seeds, names))
        with atomic_open(path, binary=True) as fh:
            for hmm in hmms:
                hmm.write(fh)
    return path


#: how a set's models describe themselves (the description part :func:`file_models` is given)
DESCRIPTION = "seeded, calibrated family model: "


class _SetFile:
    """The models of one set as read from its file, generated on the first call."""

    def __init__(self, name: str):
        self.name, self._specs = name, None

    def specs(self) -> list:
        if self._specs is None:
            self._specs = file_models(str(model_set_file(self.name)), DESCRIPTION)
        return self._specs


class SetModelSpec(ModelSpec):
    """A model of a seeded set as :func:`file_models` gives it once the set's file exists, known
    before: its name, M, description and aliases follow from the set's parameters; its sha256
    and HMM are the file's (generated on the first look at either, and checked to be the model
    the parameters named)."""

    def __init__(self, source: _SetFile, index: int, name: str, M: int, short: str, keep: bool):
        self._source, self._index, self._sha256 = source, index, None
        super().__init__(name=name, M=M, sha256=None,
                         description=f"{DESCRIPTION}{short} (M={M})", aliases=(short,),
                         keep=keep, load_hmm=lambda: self.from_file().load_hmm())

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = self.from_file().sha256
        return self._sha256

    @sha256.setter
    def sha256(self, value) -> None:
        self._sha256 = value

    def from_file(self) -> ModelSpec:
        """This model's spec read from the set's file."""
        spec = self._source.specs()[self._index]
        known = (self.name, self.M, self.description, self.aliases, self.keep)
        if (spec.name, spec.M, spec.description, spec.aliases, spec.keep) != known:
            raise RuntimeError(f"model set {self._source.name}: model {self._index + 1} of its "
                               f"file is {spec.name} (M={spec.M}), not {self.name} (M={self.M})")
        return spec


def model_set_specs(name: str) -> list:
    """The models of the set ``name`` without generating it (:class:`SetModelSpec`)."""
    n, seed = parse_model_set(name)
    stem, source = canonical_name(n, seed), _SetFile(name)
    return [SetModelSpec(source, i, stem if n == 1 else f"{stem}/{short}", int(M), short,
                         n <= KEEP_PROFILES)
            for i, (short, M) in enumerate(zip(model_names(n, seed), mixed_lengths(n, seed)))]
