"""Profile-workload data: pyhmmer's shipped models and proteome, and a seeded protein generator."""
from __future__ import annotations

import glob
import os
from typing import Optional

import numpy as np

from .model import AMINO_K, ProfileModel, SequenceSet

PROTEOME = "938293.PRJEB85.HG003687.faa"


def pyhmmer_data_dir() -> Optional[str]:
    """pyhmmer's bundled test data folder, or None when pyhmmer (or its data) is missing."""
    try:
        import pyhmmer
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(pyhmmer.__file__), "tests", "data")
    return path if os.path.isdir(path) else None


def model_files() -> list:
    """The shipped text .hmm files (protein and nucleotide), sorted."""
    base = pyhmmer_data_dir()
    return sorted(glob.glob(os.path.join(base, "hmms", "txt", "*.hmm"))) if base else []


def read_hmms(path: str) -> list:
    import pyhmmer
    with pyhmmer.plan7.HMMFile(path) as hfile:
        return list(hfile)


def load_models(path: Optional[str] = None) -> list:
    """ProfileModels of every protein model in ``path`` (default: every shipped file)."""
    paths = [path] if path else model_files()
    return [ProfileModel.from_hmm(h) for p in paths for h in read_hmms(p) if h.alphabet.is_amino()]


def load_fasta(path: str) -> SequenceSet:
    """A protein FASTA file digitized by pyhmmer (HMMER amino codes)."""
    import pyhmmer
    abc = pyhmmer.easel.Alphabet.amino()
    with pyhmmer.easel.SequenceFile(path, digital=True, alphabet=abc) as sf:
        return SequenceSet.from_pyhmmer(sf.read_block())


def load_proteome() -> SequenceSet:
    """The 2,100-protein proteome shipped with pyhmmer (682,583 residues)."""
    base = pyhmmer_data_dir()
    if base is None:
        raise FileNotFoundError("pyhmmer (with its test data) is not installed")
    return load_fasta(os.path.join(base, "seqs", PROTEOME))


def background_frequencies() -> np.ndarray:
    """HMMER's amino background composition (p7_bg, BLOSUM62 frequencies), 20 values."""
    import pyhmmer
    bg = pyhmmer.plan7.Background(pyhmmer.easel.Alphabet.amino())
    f = np.asarray(bg.residue_frequencies, dtype=np.float64)[:AMINO_K]
    return f / f.sum()


def generate_proteins(n_residues: int, seed: int = 0, mean_length: float = 360.0,
                      sigma: float = 0.6, min_length: int = 30, max_length: int = 35000,
                      frequencies: Optional[np.ndarray] = None) -> SequenceSet:
    """A seeded protein database of about ``n_residues`` residues: lognormal lengths
    (UniProt-like: median ~300, long tail) and i.i.d. residues from the background composition.
    Swiss-Prot-sized: ``n_residues=2e8``."""
    rng = np.random.default_rng(seed)
    freq = background_frequencies() if frequencies is None else np.asarray(frequencies, float)
    mu = np.log(mean_length) - sigma ** 2 / 2
    lens = []
    total = 0
    while total < n_residues:
        chunk = np.clip(rng.lognormal(mu, sigma, 4096).astype(np.int64), min_length, max_length)
        lens.append(chunk)
        total += int(chunk.sum())
    lens = np.concatenate(lens)
    cut = int(np.searchsorted(np.cumsum(lens), n_residues)) + 1
    lens = lens[:cut]
    offs = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    # residues drawn in chunks (a Swiss-Prot-sized set never holds more than one chunk of floats)
    cdf = np.cumsum(freq)
    cdf /= cdf[-1]
    residues = np.empty(int(offs[-1]), dtype=np.uint8)
    chunk = 1 << 24
    for s in range(0, residues.size, chunk):
        u = rng.random(min(chunk, residues.size - s))
        residues[s:s + u.size] = np.minimum(np.searchsorted(cdf, u, side="right"), AMINO_K - 1)
    names = [f"synthetic_{seed}_{i}" for i in range(lens.size)]
    return SequenceSet(names, residues, offs)


#: seeded synthetic databases: name -> (residues, seed, description)
SYNTHETIC = {
    "proteins-1m": (1_000_000, 1, "seeded synthetic proteins, 1e6 residues (CI-sized)"),
    "proteins-swissprot": (200_000_000, 2, "seeded synthetic proteins, Swiss-Prot-sized "
                                           "(2e8 residues, ~557k proteins)"),
}


def _sha256_file(path: str) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def catalog() -> list:
    """The profile workload's sequence databases as the project's Dataset records (their loader
    returns a :class:`SequenceSet`, not a PairSet; ``n_pairs`` holds the number of sequences)."""
    import hashlib
    import json
    from ..datasets.base import Dataset
    out = []
    base = pyhmmer_data_dir()
    if base:
        path = os.path.join(base, "seqs", PROTEOME)
        out.append(Dataset(name="proteome", kind="fasta", path=path, sha256=_sha256_file(path),
                           description="pyhmmer's 2,100-protein proteome (HG003687, 682,583 "
                                       "residues), HMMER-digitized",
                           loader=load_proteome, n_pairs=2100))
    for name, (n_res, seed, text) in SYNTHETIC.items():
        params = {"n_residues": n_res, "seed": seed, "generator": "generate_proteins/1"}
        digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
        out.append(Dataset(name=name, kind="synthetic", description=text, sha256=digest,
                           loader=(lambda n=n_res, s=seed: generate_proteins(n, seed=s)),
                           params=params))
    return out
