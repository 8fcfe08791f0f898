"""The profile workload's benchmark matrix as the runner's cells: database x model(s) x kind,
database-major (each database loaded or generated once), and its chunking (one launch per
search). The databases and models themselves are :mod:`hmmbench.profile.datasets`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..dataset import Dataset
from ..errors import UserError
from .batch import BATCH_KINDS, batch_label, group_models
from .datasets import GENERATE_RESIDUES_PER_S, sha256_of_params
from .job import ProfileBatch, ProfileSearch, REFERENCE_CHECK_CELLS, TOLERANCE
from .model import SequenceSet


class _LastDatabase:
    """The sequence set of the database in use: cells run database-major, so one is enough
    (a Swiss-Prot-sized set is 0.6 GB)."""

    def __init__(self):
        self.sha, self.seqs = None, None

    def has(self, db) -> bool:
        return self.sha == db.sha256

    def get(self, db) -> SequenceSet:
        if not self.has(db):
            self.sha, self.seqs = None, None           # free the previous one first
            self.seqs = db.load()
            self.sha = db.sha256
            db._cache = None                            # held here, not twice
        return self.seqs


def _make_cell_class():

    @dataclass
    class ProfileCell(Dataset):
        """One database x model x kind of the profile workload, as the runner's Dataset: its
        load() is the ProfileSearch; the attributes are the runner's hints (see runner)."""
        axes: dict = field(default_factory=dict)
        tolerance: Optional[float] = None
        check_cells: Optional[int] = None
        nonfinite_equal: bool = True
        note: Optional[Callable] = field(default=None, repr=False)
        #: the sequence database and the number of models: the memory estimate's shape
        database: Optional[Dataset] = field(default=None, repr=False)
        n_models: int = 1
        #: the cell's sha256 from its database's and models' identities, computed on first use
        #: (a generated model set is planned before its file exists: modelsets.SetModelSpec)
        identity: Optional[Callable] = field(default=None, repr=False)

        @property
        def sha256(self) -> str:
            if self._sha256 is None and self.identity is not None:
                self._sha256 = self.identity()
            return self._sha256

        @sha256.setter
        def sha256(self, value) -> None:
            self._sha256 = value

        def loading_note(self) -> Optional[str]:
            return self.note() if self.note else None

        @property
        def label(self) -> str:
            """What progress lines call this cell."""
            return self.description

    return ProfileCell


def profile_cells(databases: list, models: list, kinds: list, batch: int = 1,
                  bias_filter: bool = True) -> list:
    """The runner's datasets for databases x models x kinds (kinds may include ``pipeline``,
    the cell of the whole-pipeline peers), database-major so that each database is loaded or
    generated once. ``batch`` > 1: the kinds that batch (ssv, msv) run the models sorted by
    length in cells of ``batch`` models each (:mod:`.batch`; a lone remainder is a cell of its
    own: a batch of one), after the other kinds' cells."""
    cell_class = _make_cell_class()
    last = _LastDatabase()
    batched = [k for k in kinds if k in BATCH_KINDS] if batch > 1 else []
    cells = []
    for db in databases:
        def note(db=db):
            if last.has(db) or db.kind != "synthetic":
                return None
            n = db.params["n_residues"]
            return (f"generating database {db.name}: {n:.3g} residues (about "
                    f"{max(1.0, n / GENERATE_RESIDUES_PER_S):.0f} s on the 2-core dev box)")
        units = [([spec], spec.name, kind, 1) for spec in models for kind in kinds
                 if kind not in batched]
        at = 0
        for group in (group_models(models, batch) if batched else []):
            units += [(group, batch_label(group, at), kind, batch) for kind in batched]
            at += len(group)
        cells += [_cell(cell_class, db, group, name, kind, last, note, size,
                        bias_filter or kind != "pipeline")
                  for group, name, kind, size in units]
    return cells


def _cell(cell_class, db, specs: list, name: str, kind: str, last: _LastDatabase, note,
          batch: int = 1, bias_filter: bool = True):
    """One database x model(s) x kind cell: one model's ProfileSearch, or (``batch`` > 1) a
    ProfileBatch of ``specs`` (model = ``name``, model_length = the largest M)."""
    M = max(s.M for s in specs)
    axes = {"workload": "profile", "model": name, "model_length": M, "kind": kind,
            "residues": db.n_cells}
    params = {"database": db.name, "model": name, "kind": kind}
    if not bias_filter:                   # a --nobias pipeline: a cell of its own
        params["bias_filter"] = False

    def load():
        seqs = last.get(db)
        axes["residues"] = seqs.n_residues
        parts = []
        for spec in specs:
            model, hmm = spec.load()
            parts.append(ProfileSearch(model, seqs, kind, hmm, database=db.sha256,
                                       bias_filter=bias_filter))
        if batch == 1:
            return parts[0]
        return ProfileBatch(parts, tuple(s.name for s in specs), database=db.sha256,
                            size=batch)
    kind_label = kind if bias_filter else f"{kind} (--nobias)"

    def identity() -> str:
        model_key = specs[0].sha256 if batch == 1 else [s.sha256 for s in specs]
        key = {"database": db.sha256, "model": model_key, "kind": kind}
        if not bias_filter:
            key["bias_filter"] = False
        return sha256_of_params(key)
    return cell_class(
        name=db.name, kind="profile", loader=load,
        description=f"{db.name} x {name} (M={M}) x {kind_label}" if batch == 1 else
        f"{db.name} x {name} ({len(specs)} models, M={min(s.M for s in specs)}..{M}) x {kind}",
        sha256=None, identity=identity,
        n_pairs=db.n_pairs and db.n_pairs * len(specs), params=params,
        default_chunking="whole", axes=axes, tolerance=TOLERANCE.get(kind),
        check_cells=REFERENCE_CHECK_CELLS.get(kind), note=note, database=db,
        n_models=len(specs))


def launches(job, mode: str) -> list:
    """The runner's chunking for profile searches: one launch per job (``whole``)."""
    if mode != "whole":
        raise UserError(f"chunking '{mode}' does not apply to the profile workload (it runs "
                        "each database x model x kind as one job: 'whole')")
    return [job]
