"""The profile (HMMER3) workload as the core sees it: databases x models x kinds as the runner's
cells, its own options (--model, --kind), the catalog and the scores file."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np

from cpu_reference.profile.generic import bits

from ..errors import UnknownName, UserError
from ..fileio import atomic_open, check_not_input
from ..report import Column, Listing, fmt_count
from ..workload import Workload
from . import datasets as pds
from .batch import check_batch_kinds, parse_batch_models
from .cells import launches, profile_cells
from .job import JOB_KINDS, PIPELINE, ProfileBatch, ProfileSearch
from .shape import ProfileShape

#: most sequences a cross-check covers when the database is too big for the reference
SAMPLE_SEQUENCES = 5000
DEFAULT_KINDS = ("ssv", "msv", "vf")


def parse_kinds(specs: list) -> list:
    """--kind values (repeatable, comma-separated) in order, checked."""
    kinds = [k.strip() for spec in specs for k in spec.split(",") if k.strip()]
    for k in kinds:
        if k not in JOB_KINDS:
            raise UnknownName("score kind", k, JOB_KINDS)
    return list(dict.fromkeys(kinds))


@dataclass(frozen=True)
class ProfileOptions:
    """The profile workload's own options: ``--model`` and ``--kind`` as given (repeatable),
    ``--batch-models`` (None: not given)."""
    models: tuple = ()
    kinds: tuple = ()
    batch_models: Optional[str] = None
    #: ``--nobias``: the pipeline without HMMER's biased-composition filter
    nobias: bool = False


def _need_pyhmmer() -> None:
    try:
        import pyhmmer  # noqa: F401 - models, digitizing and the background come from it
    except ImportError:
        raise UserError("the profile workload needs pyhmmer (pip install 'hmmbench[profile]')") \
            from None


class Profile(Workload):
    name = "profile"
    reference = "profile-numpy"
    item_noun = "sequences"
    sample_items = SAMPLE_SEQUENCES
    backend_specs = (
        "hmmbench.profile.reference:backends",
        "hmmbench.profile.peers:backends",
        "hmmbench.profile.device.opencl:backends",
        "hmmbench.profile.device.cuda:backends",
    )
    own_options = {"model": "--model", "kind": "--kind", "batch_models": "--batch-models",
                   "nobias": "--nobias"}
    #: (the database being sharded, its slices by (start, stop)): see shard
    _sliced: tuple = (None, {})

    def add_arguments(self, command: str, parser) -> None:
        if command == "run":
            parser.add_argument("--model", action="append", default=[],
                                help="profile workload: a model (repeatable): a shipped one "
                                     "(PF02826, LuxC, ...), random-M<size>[:seed], an HMM "
                                     "file or models-mixed<N> (every model in it; default: "
                                     "PF02826 and LuxC)")
            parser.add_argument("--kind", action="append", default=[],
                                help="profile workload: score kinds, comma-separated or repeated, "
                                     "of ssv,msv,vf,viterbi,forward,gmsv,pipeline (default: "
                                     "ssv,msv,vf, plus pipeline where a selected backend runs "
                                     "it: the device pipelines, the reference, the CPU peers)")
            parser.add_argument("--batch-models", metavar="K", default=None,
                                help="profile workload: run the models (sorted by length) K per "
                                     "cell in one SSV / MSV launch (the warp kernels; "
                                     "aggregate GCUPS); kinds ssv,msv only (default 1: one "
                                     "model per cell)")
            parser.add_argument("--nobias", action="store_true", default=False,
                                help="profile workload: the pipeline without HMMER's "
                                     "biased-composition filter (as hmmsearch --nobias; "
                                     "default: on, as hmmsearch)")
        elif command == "score":
            parser.add_argument("--model", action="append", default=[],
                                help="profile workload: the model (default: PF02826)")
            parser.add_argument("--kind", action="append", default=[],
                                help="profile workload: the score kind (ssv, msv, vf, viterbi, "
                                     "forward, gmsv)")

    def parse_options(self, values: Mapping) -> ProfileOptions:
        return ProfileOptions(models=tuple(values.get("model") or ()),
                              kinds=tuple(values.get("kind") or ()),
                              batch_models=values.get("batch_models"),
                              nobias=bool(values.get("nobias")))

    def plan(self, options, backends: list) -> tuple:
        """Databases x models x kinds as cells, and the backends of each cell."""
        _need_pyhmmer()
        own = options.workload_options or ProfileOptions()
        dbs = [pds.resolve_database(n) for n in (options.datasets or pds.DEFAULT_DATABASES)]
        models = [s for n in (own.models or pds.DEFAULT_MODELS) for s in pds.resolve_models(n)]
        kinds = parse_kinds(own.kinds) or list(DEFAULT_KINDS)
        # A "pipeline" cell per database x model when a selected backend runs the pipeline.
        if PIPELINE not in kinds and not own.kinds and any(
                PIPELINE in getattr(b, "kinds", ()) for b in backends):
            kinds.append(PIPELINE)
        batch = parse_batch_models(own.batch_models)
        if own.batch_models is not None:
            kinds = check_batch_kinds(batch, kinds, bool(own.kinds))
        cells = profile_cells(dbs, models, kinds, batch, bias_filter=not own.nobias)
        first = cells[0] if cells else None

        def backends_for(cell) -> list:
            kind = cell.axes["kind"]
            out = []
            for b in backends:
                does = getattr(b, "kinds", None)
                if does is None or kind in does:
                    out.append(b)
                elif cell is first and not set(does) & set(kinds):
                    out.append(b)      # computes none of the kinds asked for: one row says why
            return out
        return cells, {"backends_for": backends_for, "launches_fn": launches}

    def unit_shape(self, cell, mode: str = "whole"):
        """A cell's shape before its database is generated or its model loaded: a generated
        database's from its size, a file database's from its lengths (read, then let go)."""
        db = getattr(cell, "database", None)
        if db is None:
            return None
        M, kind, models = cell.axes["model_length"], cell.axes["kind"], cell.n_models
        if db.kind == "synthetic" and db.n_cells:
            return ProfileShape.generated(int(db.n_cells), M, kind, models)
        loaded = db._cache is not None
        shape = ProfileShape.of(db.load(), M, kind, models)
        if not loaded:
            db._cache = None                 # read again at its turn, not held meanwhile
        return shape

    def loaded_shape(self, unit, detailed: bool = True):
        if isinstance(unit, ProfileBatch):
            first = unit.parts[0]
            return ProfileShape.of(first.seqs, max(p.model.M for p in unit.parts), first.kind,
                                   len(unit.parts))
        return ProfileShape.of(unit.seqs, unit.model.M, unit.kind)

    def measured_unit(self, cell: str) -> tuple:
        """``DATABASE/MODEL/KIND``: the search, its shape, and a generated database's shape from
        its name alone; ``MODEL+MODEL+...``: a batched cell of those models (a ProfileBatch)."""
        db_name, model_names, kind = cell.split("/")
        db = pds.resolve_database(db_name)
        seqs = db.load()
        parts = []
        for name in model_names.split("+"):
            model, hmm = pds.resolve_model(name).load()
            parts.append(ProfileSearch(model, seqs, kind, hmm))
        M, n = max(p.model.M for p in parts), len(parts)
        named = ProfileShape.generated(db.n_cells, M, kind, n) if db.kind == "synthetic" else None
        unit = parts[0] if n == 1 else ProfileBatch(parts, tuple(model_names.split("+")))
        return unit, ProfileShape.of(seqs, M, kind, n), named

    def launches(self, unit, mode: str) -> list:
        return launches(unit, mode)

    def check_chunking(self, mode: str) -> None:
        if mode != "whole":
            self.launches(None, mode)

    def shard_costs(self, unit):
        """Cells per sequence: the model length times the sequence length."""
        if isinstance(unit, ProfileBatch):
            raise UserError("batched cells (--batch-models) cannot be sharded over a cluster")
        return unit.seqs.lengths * unit.model.M

    def shard(self, unit, start: int, stop: int):
        """Sequences ``start:stop``; the same slice object, under its own resident key, for every
        model and kind of a database, so that a GPU backend keeps it resident."""
        seqs, slices = self._sliced
        if seqs is not unit.seqs:                   # another database: drop the old slices
            seqs, slices = unit.seqs, {}
            self._sliced = (seqs, slices)
        if (start, stop) not in slices:
            slices[start, stop] = seqs.slice(start, stop)
        # a slice of a resident database stays resident (its own key): without a key a device
        # backend would upload the worker's slice again for every call
        key = f"{unit.database}[{start}:{stop}]" if unit.database else None
        return ProfileSearch(unit.model, slices[start, stop], unit.kind, unit.hmm, database=key,
                             bias_filter=unit.bias_filter)

    def catalog_tables(self) -> list:
        """The sequence databases and models."""
        dbs = Listing("profile databases (-d)",
                      [Column("name", key=True), Column("sequences", right=True, priority=1),
                       Column("residues", right=True, priority=1),
                       Column("description", wrap=True, priority=2)])
        for ds in pds.catalog():
            dbs.add(ds.name, fmt_count(ds.n_pairs), fmt_count(ds.n_cells), ds.description)
        dbs.add("proteins-<residues>[:seed]", "-", "any",
                "generated on demand, e.g. proteins-2e8 (Swiss-Prot-sized, ~8 s to generate) "
                "or proteins-2e4:7; lognormal lengths, background composition, deterministic")
        models = Listing("profile models (--model)",
                         [Column("name", key=True), Column("M", right=True, priority=1),
                          Column("description", wrap=True, priority=2)])
        for spec in pds.shipped_models():
            models.add(spec.name, str(spec.M), spec.description)
        models.add("random-M<size>[:seed]", "size", "pyhmmer HMM.sample, seeded (default seed "
                   "1): the model-size curve, e.g. random-M100 .. random-M2400; no E-value "
                   "calibration (the pipeline peers refuse it)")
        models.add("query-M<size>[:seed]", "size", "a calibrated single-sequence model "
                   "(pyhmmer Builder on a seeded background sequence, as phmmer)")
        models.add("models-mixed<N>[:seed]", "50..2000", "a file of N calibrated family models "
                   "of mixed sizes (pyhmmer: sampled HMM -> emitted alignment -> Builder), "
                   "generated once into the cache, e.g. models-mixed100: a many-model search")
        return [dbs, models]

    def score(self, options, backend) -> int:
        """One line per sequence of the database, database order: name, score in nats (HMMER's
        raw score of that kind, before the null model; inf = overflow, nan = HMMER's "no
        result"), bits against the null model. One model and one kind."""
        own = options.workload_options or ProfileOptions()
        if len(own.models) > 1:
            raise UserError("score writes one model's scores: give one --model")
        kinds = parse_kinds(own.kinds)
        if len(kinds) != 1 or kinds[0] == PIPELINE:
            raise UserError("score needs exactly one --kind with per-sequence scores "
                            "(ssv, msv, vf, viterbi, forward, ...)")
        db = pds.resolve_database(options.dataset)
        check_not_input(options.output, "--output", [db.path])     # the proteome, found by name
        model, hmm = pds.resolve_model(own.models[0] if own.models
                                       else pds.DEFAULT_MODELS[0]).load()
        seqs = db.load()
        job = ProfileSearch(model, seqs, kinds[0], hmm)
        refusal = backend.refuse_reason(job)
        if refusal:
            raise UserError(f"backend '{backend.name}' refuses {kinds[0]}: {refusal}")
        nats = np.asarray(backend.run(job).log10, np.float64)     # a device's float32 too
        if len(nats) != len(seqs):
            raise RuntimeError(f"backend returned {len(nats)} scores for {len(seqs)} sequences")
        score_bits = bits(nats, seqs.lengths)
        d = options.digits
        with atomic_open(options.output) as out:
            out.write("# name\tnats\tbits\n")
            out.writelines(f"{name}\t{v:.{d}f}\t{b:.{d}f}\n"
                           for name, v, b in zip(seqs.names, nats, score_bits))
        return len(seqs)


WORKLOAD = Profile()
