"""``hmmbench run --resume FILE``: the records an earlier, unfinished run of the same matrix
already holds. Resuming mixes two runs' records in one file, so it is refused unless both are
the same sources, the same cells (same datasets by sha256, chunking modes and backends) and the
same cross-check settings; a dataset whose name is the same but whose bytes are not is named as
such."""
from __future__ import annotations

from dataclasses import fields

from ..errors import UserError
from .config import RunConfig, RunRecord

#: RunConfig fields that decide what a record's cross-check (or timing: in_flight) means: they
#: must match to resume.
CHECK_SETTINGS = ("workload", "reference", "tolerance", "tolerance_fixed", "sample_pairs",
                  "full_check_max_cells", "in_flight")


def record_from_dict(run: dict) -> RunRecord:
    """A stored run (as :func:`hmmbench.results.load` returns it) as a RunRecord again."""
    return RunRecord(**{f.name: run[f.name] for f in fields(RunRecord) if f.name in run})


def _key(cell: dict) -> tuple:
    return (cell["dataset_sha256"], cell["chunking"], cell["backend"])


def _name(key: tuple, names: dict) -> str:
    sha, mode, backend = key
    return f"backend '{backend}' on '{names.get(sha, sha[:12])}' [{mode}]"


def kept_records(doc: dict, cells: list, cfg: RunConfig, source_sha256: str,
                 where: str) -> dict:
    """Cell key -> RunRecord of every finished cell of ``doc`` (a loaded result file) when it is
    a run of the matrix ``cells`` (see :func:`hmmbench.runner.plan_cells`); UserError saying
    why not otherwise."""
    def refuse(why: str):
        raise UserError(f"--resume {where}: {why}; run without --resume (or with other "
                        "options) to start afresh")

    if doc.get("source_sha256") != source_sha256:
        refuse(f"it was written by other hmmbench sources (source_sha256 "
               f"{str(doc.get('source_sha256'))[:12]}, these are {source_sha256[:12]})")
    stored_cfg = doc.get("config") or {}
    for k in CHECK_SETTINGS:
        if k in stored_cfg and stored_cfg[k] != getattr(cfg, k):
            refuse(f"it was run with {k}={stored_cfg[k]!r}, this run has {getattr(cfg, k)!r}")
    runs = {_key(r): r for r in doc["runs"]}
    stored = set(runs) | {_key(c) for c in doc.get("not_run", [])}
    planned = {c.key for c in cells}
    names = {c.dataset.sha256: c.dataset.name for c in cells}
    names.update({k[0]: r["dataset"] for k, r in runs.items()})
    stored_names = {(r["dataset"], k[1], k[2]): k[0] for k, r in runs.items()}
    stored_names.update({(c["dataset"], c["chunking"], c["backend"]): c["dataset_sha256"]
                         for c in doc.get("not_run", []) if "dataset" in c})
    for c in cells:
        was = stored_names.get((c.dataset.name, c.mode, c.backend.name))
        if was is not None and was != c.dataset.sha256:
            refuse(f"its dataset '{c.dataset.name}' held other bytes (sha256 {was[:12]}, now "
                   f"{c.dataset.sha256[:12]}): its records are not comparable with this run's")
    missing = sorted(planned - stored)
    if missing:
        refuse(f"this run's {_name(missing[0], names)} is not in its matrix (same datasets, "
               f"chunking and backends needed; {len(missing)} such cells)")
    extra = sorted(stored - planned)
    if extra:
        refuse(f"it holds {_name(extra[0], names)}, which this run does not plan "
               f"({len(extra)} such cells)")
    return {k: record_from_dict(r) for k, r in runs.items()}
