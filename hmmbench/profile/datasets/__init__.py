"""Profile-workload data by name: sequence databases and models.

``resolve_database(name)`` accepts ``proteome`` (pyhmmer's shipped proteome), a seeded synthetic
set (``proteins-1m``, ``proteins-swissprot``, ``proteins-<residues>[:seed]``; :mod:`.synthetic`)
or a protein FASTA path (:mod:`.files`). ``resolve_models(name)`` accepts a shipped model or file
(``PF02826``, ``RREFam``), a generated model (``random-M400``, ``query-M400``; :mod:`.synthetic`),
an HMM file path (:mod:`.models`) or a seeded many-model file (``models-mixed100``;
:mod:`.modelsets`).
"""
from __future__ import annotations

import os
import re

from ...dataset import Dataset
from ...errors import UnknownName, UserError
from ...fileio import check_input_file
from .files import (PROTEOME, _names_a_file, _sha256_file, load_fasta, load_models, load_proteome,
                    model_files, pyhmmer_data_dir, read_hmms, sha256_of_params)
from .models import KEEP_PROFILES, MAX_MODEL_M, ModelSpec, file_models, is_calibrated, \
    shipped_models
from .modelsets import MODEL_SET_PATTERNS, model_set_file, model_set_specs, parse_model_set
from .synthetic import (GENERATE_RESIDUES_PER_S, MODEL_PATTERNS, PROTEINS_PATTERN, SYNTHETIC,
                        _generated_model, background_frequencies, generate_proteins)

__all__ = [
    "DATABASE_PATTERNS", "DEFAULT_DATABASES", "DEFAULT_MODELS", "GENERATE_RESIDUES_PER_S",
    "KEEP_PROFILES", "MAX_MODEL_M", "MODEL_PATTERN", "MODEL_PATTERNS", "MODEL_SET_PATTERNS",
    "ModelSpec", "PROTEOME", "PROTEINS_PATTERN", "SYNTHETIC", "background_frequencies",
    "catalog", "file_models", "generate_proteins", "is_calibrated", "load_fasta", "load_models",
    "load_proteome", "model_files", "model_set_file", "model_set_specs", "pyhmmer_data_dir",
    "read_hmms", "resolve_database", "resolve_model", "resolve_models", "sha256_of_params", "shipped_models",
]

#: random-M<size>[:seed]: pyhmmer's HMM.sample; query-M<size>[:seed]: a calibrated
#: single-sequence model (pyhmmer's Builder on a seeded background sequence, as phmmer builds)
MODEL_PATTERN = re.compile(r"^(random|query)-M(\d+)(?::(\d+))?$")


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
    if parse_model_set(name):
        return model_set_specs(name)          # generated when a model's sha256 or HMM is needed
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
    raise UnknownName("model", name, [s.name for s in shipped] + files + list(MODEL_PATTERNS)
                      + list(MODEL_SET_PATTERNS),
                      hint="; an HMM file path runs every model in it")


#: the models of `hmmbench run --workload profile` without --model
DEFAULT_MODELS = ("PF02826", "LuxC")
DEFAULT_DATABASES = ("proteome",)
