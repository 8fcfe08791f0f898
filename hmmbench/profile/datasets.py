"""Profile-workload data: pyhmmer's shipped models and proteome, and a seeded protein generator."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..dataset import Dataset
from ..errors import InputError, UnknownName, UserError
from ..fileio import check_input_file, open_input
from . import hmmcheck
from .model import AMINO_K, ProfileModel, SequenceSet

PROTEOME = "938293.PRJEB85.HG003687.faa"


def pyhmmer_data_dir() -> Optional[str]:
    """pyhmmer's bundled test data folder, or None when pyhmmer (or its data) is missing."""
    try:
        import pyhmmer  # optional dependency, imported on first use
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(pyhmmer.__file__), "tests", "data")
    return path if os.path.isdir(path) else None


def model_files() -> list:
    """The shipped text .hmm files (protein and nucleotide), sorted."""
    base = pyhmmer_data_dir()
    return sorted(glob.glob(os.path.join(base, "hmms", "txt", "*.hmm"))) if base else []


def read_hmms(path: str) -> list:
    """Every HMM of a HMMER3 file; a file pyhmmer cannot read, a broken number in it (checked
    line by line, :mod:`.hmmcheck`) or a model HMMER's ``validate`` refuses is an InputError
    naming the file (and line)."""
    import pyhmmer  # optional dependency, imported on first use
    check_input_file(path, "HMM file")
    try:
        with open_input(path) as fh:
            # the numbers only (fast); the sums are HMMER's validate's, below
            hmmcheck.check_hmm_file(path, fh, sums=False)  # on the module: tests switch it off
        with pyhmmer.plan7.HMMFile(path) as hfile:
            hmms = list(hfile)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x})") \
            from None
    except (ValueError, EOFError, RuntimeError) as exc:    # pyhmmer's parse errors
        raise _parse_error(path, "a readable HMM file", exc) from None
    if not hmms:
        raise InputError(path, None, "not a readable HMM file: no complete model (truncated?)")
    for k, hmm in enumerate(hmms):
        try:
            hmm.validate(tolerance=2 * hmmcheck.SUM_TOLERANCE)
        except ValueError as exc:
            with open_input(path) as fh:        # the line, where the sums tell it
                hmmcheck.check_hmm_file(path, fh, sums=True)
            raise InputError(path, None, f"model {k + 1} ({_model_name(hmm)}): HMMER refuses "
                                         f"it: {_exception_text(exc)}") from None
    return hmms


def _exception_text(exc: Exception) -> str:
    """An exception's message as one line (pyhmmer's InvalidHMM cannot always make its own)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - its __str__ fails on some messages: show the arguments
        text = " ".join(a.decode("utf-8", "replace") if isinstance(a, bytes) else a
                        for a in exc.args if isinstance(a, (str, bytes))) or type(exc).__name__
    return " ".join(text.split())


def _parse_error(path: str, what: str, exc: Exception) -> InputError:
    """pyhmmer's message ("Could not parse file: Line 2: ...") as an InputError at that line."""
    text = " ".join(str(exc).split())
    m = re.search(r"[Ll]ine (\d+):\s*(.*)", text)
    detail = m.group(2) if m else text
    detail = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in detail)
    return InputError(path, int(m.group(1)) if m else None, f"not {what}: {detail}")


def load_models(path: Optional[str] = None) -> list:
    """ProfileModels of every protein model in ``path`` (default: every shipped file)."""
    paths = [path] if path else model_files()
    return [ProfileModel.from_hmm(h) for p in paths for h in read_hmms(p) if h.alphabet.is_amino()]


def _names_a_file(name: str, suffixes: tuple) -> bool:
    """Whether a --model / --dataset value is meant as a path (so that a directory, FIFO or
    symlink loop there is named as such, not called an unknown name)."""
    return os.path.lexists(name) or name.lower().endswith(suffixes) or name.startswith(
        ("./", "../", "/", "~"))


def _check_utf8_lines(path: str, what: str) -> None:
    """Every line of a text input is UTF-8 (pyhmmer would raise UnicodeDecodeError on a name
    later, with no line); an InputError at the first line that is not."""
    with open_input(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(path, lineno, f"not UTF-8 {what} text: byte "
                                               f"0x{raw[exc.start]:02x} at column "
                                               f"{exc.start + 1}") from None


def load_fasta(path: str) -> SequenceSet:
    """A protein FASTA file digitized by pyhmmer (HMMER amino codes); a malformed file, no
    sequence or an empty sequence is an InputError naming the file (and line, where known)."""
    import pyhmmer  # optional dependency, imported on first use
    abc = pyhmmer.easel.Alphabet.amino()
    _check_utf8_lines(path, "FASTA")
    try:
        with pyhmmer.easel.SequenceFile(path, digital=True, alphabet=abc, format="fasta") as sf:
            block = sf.read_block()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, EOFError, RuntimeError) as exc:
        raise _parse_error(path, "a protein FASTA file", exc) from None
    if not len(block):
        raise InputError(path, 1, "no sequences")
    for k, seq in enumerate(block):
        if not len(seq):
            raise InputError(path, _header_line(path, k), f"sequence {k + 1} is empty")
    return SequenceSet.from_pyhmmer(block)


def _header_line(path: str, k: int) -> Optional[int]:
    """The 1-based line of the k-th (0-based) '>' header of a FASTA file."""
    with open_input(path) as fh:
        seen = -1
        for lineno, line in enumerate(fh, start=1):
            if line.startswith(b">"):
                seen += 1
                if seen == k:
                    return lineno
    return None


def load_proteome() -> SequenceSet:
    """The 2,100-protein proteome shipped with pyhmmer (682,583 residues)."""
    base = pyhmmer_data_dir()
    if base is None:
        raise FileNotFoundError("pyhmmer (with its test data) is not installed")
    return load_fasta(os.path.join(base, "seqs", PROTEOME))


def background_frequencies() -> np.ndarray:
    """HMMER's amino background composition (p7_bg, BLOSUM62 frequencies), 20 values."""
    import pyhmmer  # optional dependency, imported on first use
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


#: seeded synthetic databases by alias: name -> (residues, seed, description)
SYNTHETIC = {
    "proteins-1m": (1_000_000, 1, "seeded synthetic proteins, 1e6 residues (CI-sized)"),
    "proteins-swissprot": (200_000_000, 2, "seeded synthetic proteins, Swiss-Prot-sized "
                                           "(2e8 residues, ~557k proteins)"),
}
#: generated databases by size: proteins-<residues>[:seed], e.g. proteins-2e8, proteins-2e4:7
PROTEINS_PATTERN = re.compile(r"^proteins-(\d+(?:\.\d+)?(?:e\d+)?)(?::(\d+))?$")
#: generation speed of generate_proteins on the 2-core dev box (2e8 residues in ~8 s)
GENERATE_RESIDUES_PER_S = 2.5e7


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return h.hexdigest()


def sha256_of_params(params: dict) -> str:
    """The sha256 naming a generated dataset, model or cell by its parameters."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def _synthetic_database(name: str, n_res: int, seed: int, text: str):
    params = {"n_residues": n_res, "seed": seed, "generator": "generate_proteins/1"}
    return Dataset(name=name, kind="synthetic", description=text, sha256=sha256_of_params(params),
                   loader=(lambda n=n_res, s=seed: generate_proteins(n, seed=s)),
                   params=params, n_cells=n_res)


def _proteome_database():
    base = pyhmmer_data_dir()
    if base is None:
        return None
    path = os.path.join(base, "seqs", PROTEOME)
    return Dataset(name="proteome", kind="fasta", path=path, sha256=_sha256_file(path),
                   description="pyhmmer's 2,100-protein proteome (HG003687, 682,583 "
                               "residues), HMMER-digitized",
                   loader=load_proteome, n_pairs=2100, n_cells=682_583)


def catalog() -> list:
    """The profile workload's sequence databases as the project's Dataset records (their loader
    returns a :class:`SequenceSet`, not a PairSet; ``n_pairs`` holds the number of sequences,
    ``n_cells`` the number of residues)."""
    out = [d for d in [_proteome_database()] if d is not None]
    for name, (n_res, seed, text) in SYNTHETIC.items():
        out.append(_synthetic_database(name, n_res, seed, text))
    return out


DATABASE_PATTERNS = ("proteome", *SYNTHETIC, "proteins-<residues>[:seed] (e.g. proteins-2e8)")


def resolve_database(name: str):
    """A sequence database by name (nothing generated yet); UnknownName otherwise."""
    name = str(name).strip()
    if name == "proteome":
        ds = _proteome_database()
        if ds is None:
            raise UserError("database 'proteome' needs pyhmmer (pip install pyhmmer): "
                            "it is pyhmmer's shipped test proteome")
        return ds
    if name in SYNTHETIC:
        n_res, seed, text = SYNTHETIC[name]
        return _synthetic_database(name, n_res, seed, text)
    m = PROTEINS_PATTERN.match(name)
    if m:
        n_res = int(float(m.group(1)))
        seed = int(m.group(2) or 0)
        if not 1 <= n_res <= 10 ** 10:
            raise UserError(f"database '{name}': residues must be between 1 and 1e10")
        return _synthetic_database(name, n_res, seed,
                                   f"seeded synthetic proteins, {n_res:.3g} residues, seed {seed}")
    if _names_a_file(name, (".fa", ".faa", ".fasta", ".fas", ".txt")):
        check_input_file(name, "FASTA file")
        ds = Dataset(name=os.path.basename(name), kind="fasta", path=name,
                     sha256=_sha256_file(name), description=f"protein FASTA file {name}",
                     loader=lambda: load_fasta(name))
        seqs = ds.load()   # checked now, so that a bad file fails before any work
        ds.n_pairs, ds.n_cells = len(seqs), seqs.n_residues
        return ds
    raise UnknownName("database", name, DATABASE_PATTERNS,
                      hint="; a protein FASTA file path also works")


# --- models ---------------------------------------------------------------------------------

#: random-M<size>[:seed]: pyhmmer's HMM.sample; query-M<size>[:seed]: a calibrated
#: single-sequence model (pyhmmer's Builder on a seeded background sequence, as phmmer builds)
#: HMM files of up to this many models keep every derived profile in memory (see file_models)
KEEP_PROFILES = 100
MODEL_PATTERN = re.compile(r"^(random|query)-M(\d+)(?::(\d+))?$")
MAX_MODEL_M = 100_000


@dataclass
class ModelSpec:
    """A profile model by name: a shipped HMM or a seeded generated one (loaded on demand)."""
    name: str
    M: int
    sha256: str
    description: str
    load_hmm: Callable = field(repr=False, default=None)
    aliases: tuple = ()                   # other names it answers to (HMM name, accession)
    keep: bool = True                     # cache the derived profile (False: derive per load)
    _loaded: Optional[tuple] = field(default=None, repr=False)

    def load(self) -> tuple:
        """(ProfileModel, pyhmmer HMM), cached unless ``keep`` is off."""
        if self._loaded is not None:
            return self._loaded
        hmm = self.load_hmm()
        loaded = (ProfileModel.from_hmm(hmm), hmm)
        if self.keep:
            self._loaded = loaded
        return loaded

    @property
    def calibrated(self) -> bool:
        """Whether the HMM carries E-value parameters (pipeline peers need them)."""
        return is_calibrated(self.load()[1])


def is_calibrated(hmm) -> bool:
    vec = hmm.evalue_parameters.as_vector()
    return all(v != -99999.0 for v in vec)      # p7_EVPARAM_UNSET


def _model_name(hmm) -> str:
    n = hmm.name
    return n.decode() if isinstance(n, bytes) else str(n)


def _accession(hmm) -> str:
    a = hmm.accession
    a = a.decode() if isinstance(a, bytes) else (a or "")
    return a.split(".")[0]


def file_models(path: str, description: str = "") -> list:
    """ModelSpecs of every protein model of one HMM file, addressable by file stem (a file of
    one model) or ``<stem>/<name>``, HMM name or accession."""
    hmms = [h for h in read_hmms(path) if h.alphabet.is_amino()]
    stem = os.path.splitext(os.path.basename(path))[0]
    digest = _sha256_file(path)
    # a big file (Pfam-A) keeps its HMMs, not the derived profiles of every model at once
    keep = len(hmms) <= KEEP_PROFILES
    out = []
    for i, h in enumerate(hmms):
        name = stem if len(hmms) == 1 else f"{stem}/{_model_name(h)}"
        out.append(ModelSpec(
            name=name, M=h.M, sha256=sha256_of_params({"file": digest, "index": i}),
            description=f"{description}{_model_name(h)} {_accession(h)} (M={h.M})".replace(
                "  ", " "),
            aliases=tuple(a for a in (_model_name(h), _accession(h)) if a),
            load_hmm=(lambda h=h: h), keep=keep))
    return out


def shipped_models() -> list:
    """ModelSpecs of pyhmmer's shipped protein models (files with several models:
    ``RREFam/<name>``)."""
    return [spec for path in model_files()
            for spec in file_models(path, "shipped with pyhmmer: ")]


def _generated_model(kind: str, M: int, seed: int) -> ModelSpec:
    def load():
        import pyhmmer  # optional dependency, imported on first use
        abc = pyhmmer.easel.Alphabet.amino()
        if kind == "random":
            hmm = pyhmmer.plan7.HMM.sample(abc, M, seed)
        else:
            rng = np.random.default_rng(seed)
            freq = np.cumsum(background_frequencies())
            codes = np.minimum(np.searchsorted(freq / freq[-1], rng.random(M), side="right"),
                               AMINO_K - 1).astype(np.uint8)
            query = pyhmmer.easel.DigitalSequence(abc, name=f"query-M{M}".encode(),
                                                  sequence=codes)
            hmm = pyhmmer.plan7.Builder(abc, seed=seed).build(
                query, pyhmmer.plan7.Background(abc))[0]
        hmm.name = f"{kind}-M{M}:{seed}".encode()
        return hmm
    what = ("pyhmmer HMM.sample (Dirichlet-random emissions and transitions; no E-value "
            "calibration)" if kind == "random" else
            "pyhmmer Builder on a seeded background sequence (calibrated, like phmmer)")
    return ModelSpec(name=f"{kind}-M{M}" + (f":{seed}" if seed != 1 else ""), M=M,
                     sha256=sha256_of_params({"model": kind, "M": M, "seed": seed,
                                          "generator": "pyhmmer-0.12"}),
                     description=f"seeded model, M={M}, seed {seed}: {what}", load_hmm=load)


MODEL_PATTERNS = ("random-M<size>[:seed]", "query-M<size>[:seed]")


def resolve_model(name: str) -> ModelSpec:
    """A model by name: shipped (file stem, HMM name or accession) or generated
    (``random-M400``, ``random-M400:7``, ``query-M400``); UnknownName otherwise."""
    specs = resolve_models(name)
    if len(specs) != 1:
        raise UserError(f"model '{name}' names {len(specs)} models: give one of them "
                        f"({', '.join(s.name for s in specs[:3])}, ...)")
    return specs[0]


def resolve_models(name: str) -> list:
    """Every model a --model value names: one shipped or generated model, every model of a
    shipped file (``RREFam``: its 10 models), or every protein model of an HMM file given by
    path (a Pfam-A file: a sweep over thousands of models)."""
    name = str(name).strip()
    m = MODEL_PATTERN.match(name)
    if m:
        M, seed = int(m.group(2)), int(m.group(3) or 1)
        if not 1 <= M <= MAX_MODEL_M:
            raise UserError(f"model '{name}': size must be between 1 and {MAX_MODEL_M}")
        if seed < 1:
            raise UserError(f"model '{name}': seed must be at least 1 (0 means unseeded "
                            "in pyhmmer)")
        return [_generated_model(m.group(1), M, seed)]
    if pyhmmer_data_dir() is None:
        raise UserError(f"model '{name}' needs pyhmmer (pip install pyhmmer); generated "
                        f"models: {', '.join(MODEL_PATTERNS)}")
    if _names_a_file(name, (".hmm", ".txt")):
        check_input_file(name, "HMM file")
        try:
            specs = file_models(name, f"from {os.path.basename(name)}: ")
        except (ValueError, EOFError, OSError) as exc:
            raise UserError(f"{name}: not a readable HMM file ({exc})") from None
        if not specs:
            raise UserError(f"{name}: no protein models in this HMM file")
        return specs
    shipped = shipped_models()
    for spec in shipped:
        if name == spec.name or name in spec.aliases:
            return [spec]
    in_file = [s for s in shipped if s.name.startswith(name + "/")]
    if in_file:
        return in_file
    files = sorted({s.name.split("/")[0] for s in shipped if "/" in s.name})
    raise UnknownName("model", name, [s.name for s in shipped] + files + list(MODEL_PATTERNS),
                      hint="; an HMM file path runs every model in it")


#: the models of `hmmbench run --workload profile` without --model
DEFAULT_MODELS = ("PF02826", "LuxC")
DEFAULT_DATABASES = ("proteome",)
