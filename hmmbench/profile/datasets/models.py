"""Profile models by name: :class:`ModelSpec` (loaded on demand), an HMM file's models and
pyhmmer's shipped ones."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..model import ProfileModel
from .files import _model_name, _sha256_file, model_files, read_hmms, sha256_of_params

#: HMM files of up to this many models keep every derived profile in memory (see file_models)
KEEP_PROFILES = 100
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

