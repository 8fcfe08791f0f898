"""Result files: one JSON document per benchmark invocation.

Written atomically (a temp file in the target directory, then ``os.replace``), so a crash or an
error never leaves a partial file. Non-finite floats (an error of ``inf`` when a backend returned
NaN) are stored as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"`` to keep the files strict
JSON, and turned back into floats on load.

The format is published as a JSON Schema, ``hmmbench/schema/result.schema.json``
(:func:`json_schema`), for readers in other languages; :func:`validate` checks the same rules
without needing a JSON Schema library.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import sys
from pathlib import Path
from typing import Optional

import numpy as np

from . import __version__
from .errors import UserError
from .fileio import atomic_open

#: The result schema version; the JSON Schema file's ``$id`` ends with it.
SCHEMA_VERSION = 2
DEFAULT_DIR = Path("results") / "runs"

#: Top-level keys and their types.
TOP_LEVEL = {"hmmbench_version": str, "created": str, "command": list, "host": dict,
             "devices": list, "chunking": str, "runs": list}
#: Keys every run record must have, with the types they may take (None = null allowed).
RUN_FIELDS = {
    "dataset": (str,), "dataset_sha256": (str,), "pairs": (int, None), "cells": (int, None),
    "backend": (str,), "api": (str,), "family": (str,), "device": (str,), "params": (dict,),
    "timing_s": (dict,), "timing_min_s": (dict,), "timing_max_s": (dict,),
    "gcups_kernel": (float, None), "gcups_total": (float, None),
    "speedup_vs_reference": (float, None), "repeats": (int,),
    "max_abs_err": (float, None), "n_checked": (int,), "n_over_tol": (int,),
    "n_fallback": (int,), "status": (str,), "reason": (str,), "info": (dict,),
}
#: unchecked: ran, but no reference was available to cross-check it. peer: a whole-pipeline
#: peer (profile workload: pyhmmer's Pipeline, hmmsearch) timed on the same data; it reports no
#: per-item results, so it is never cross-checked (and never "ok").
STATUSES = ("ok", "mismatch", "error", "unavailable", "unchecked", "peer")
#: Optional per-run fields of the profile workload (absent or null in pair-HMM runs):
#: workload, model, model_length (M), kind (ssv|msv|vf|viterbi|forward|pipeline), residues;
#: and for every workload ``sampled`` (the cross-check covered a sample).
PROFILE_FIELDS = ("workload", "model", "model_length", "kind", "residues", "sampled")
#: Record fields that name a cell beyond dataset x backend x chunking, when a workload sets them
#: (profile: the model and the score kind). Core code reads them generically through cell_axes.
CELL_AXES = ("model", "kind")
#: Which of them say what the data is (rows of a pivot) rather than what was computed on it
#: (columns, beside the backend).
DATA_AXES = ("model",)
#: A size that orders the rows of a data axis (the profile's model length M), and its short name.
CELL_SIZE = ("model_length", "M")
#: Optional per-stage lists of every timed pass (seconds), kept since schema 2 for the compare
#: gate's noise model; older files have none.
SAMPLES_FIELD = "samples_s"
#: Optional per-run fields of cluster runs (hmmbench.cluster): ``workers`` (how many a sharded
#: run used), ``worker`` and ``host`` (the Dask worker and host of a fleet run's row); the
#: document's optional ``cluster`` key holds the cluster and the scaling study.
CLUSTER_FIELDS = ("workers", "worker", "host")
#: What names a cell of the matrix in the optional ``not_run`` list (cells without a record).
NOT_RUN_KEYS = ("dataset_sha256", "chunking", "backend")
#: Float fields that may hold non-finite values.
_FLOAT_FIELDS = ("max_abs_err", "max_abs_err_expected", "gcups_kernel", "gcups_total",
                 "speedup_vs_reference")


def json_schema() -> dict:
    """The result file format as a JSON Schema (draft 2020-12) document."""
    from importlib import resources
    return json.loads(resources.files("hmmbench.schema").joinpath("result.schema.json")
                      .read_text(encoding="utf-8"))


def jsonable(obj):
    """Plain JSON data: numpy scalars/arrays become Python, non-finite floats become strings."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def cell_axes(run) -> dict:
    """The cell axes a run record carries (those of CELL_AXES that are set), in order."""
    get = run.get if isinstance(run, dict) else (lambda k, d=None: getattr(run, k, d))
    return {k: get(k) for k in CELL_AXES if get(k) is not None}


def run_label(r: dict) -> str:
    """A run's backend as rows and columns name it: with the worker count of a sharded cluster
    run ("cuda-subwarp x2"), the worker of a fleet run ("cuda-subwarp @0/host") or the calls
    kept in flight ("cuda-subwarp [in-flight 4]")."""
    label = r["backend"]
    if r.get("workers"):
        label += f" x{r['workers']}"
    if (r.get("in_flight") or 1) > 1:   # --in-flight N: never matched with N = 1 figures
        label += f" [in-flight {r['in_flight']}]"
    if r.get("worker") is not None:
        label += f" @{r['worker']}/{r.get('host')}"
    return label


def _strict_constant(name: str):
    """json.loads hook: result files are strict JSON (non-finite values are stored as strings)."""
    raise ValueError(f"bare {name} is not strict JSON (hmmbench stores it as the string "
                     f"\"{name}\")")


def _unstring_float(v):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v) \
        if isinstance(v, str) else v


def document_header(command: Optional[list] = None) -> dict:
    """What a result document says about the invocation: version, sources, host, command."""
    from .hostinfo import host_info, source_commit, source_digest
    return {
        "hmmbench_version": __version__,
        "source_sha256": source_digest(),
        "source_commit": source_commit(),
        "schema": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv if command is None else command),
        "host": host_info(),
    }


def make_document(bench, command: Optional[list] = None,
                  header: Optional[dict] = None) -> dict:
    """The result document of a :class:`hmmbench.runner.Benchmark` (``header``: a
    :func:`document_header` made once for the checkpoints of a long run). ``complete`` is false
    while cells of the matrix have no record; ``not_run`` lists them (``--resume`` runs them)."""
    not_run = list(getattr(bench, "not_run", []) or [])
    cluster = {"cluster": bench.cluster} if getattr(bench, "cluster", None) else {}
    return jsonable({
        **(header or document_header(command)),
        "devices": bench.devices,
        "chunking": bench.chunking,
        "config": bench.config,
        "complete": not not_run,
        "not_run": not_run,
        "runs": [r.to_dict() for r in bench.records],
        **cluster,
    })


def default_path(now: Optional[_dt.datetime] = None, directory: Path = DEFAULT_DIR) -> Path:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return directory / f"hmmbench-{now.strftime('%Y%m%dT%H%M%S')}Z.json"


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path) as fh:
        fh.write(text)


def write(doc: dict, path) -> Path:
    validate(doc, str(path))
    text = json.dumps(jsonable(doc), indent=1, allow_nan=False) + "\n"
    atomic_write_text(path, text)
    return Path(path)


def _type_ok(v, types) -> bool:
    for t in types:
        if t is None and v is None:
            return True
        if t is float and isinstance(v, (int, float)) and not isinstance(v, bool):
            return True
        if t is int and isinstance(v, int) and not isinstance(v, bool):
            return True
        if t not in (None, float, int) and isinstance(v, t):
            return True
    return False


def _check_seconds(bad, where: str, v, stage: str, repeats: int) -> None:
    """A stage time: a finite number of seconds, not negative; a timed run's total above 0 (a
    stage a backend does not have, such as a peer's h2d, may be 0)."""
    if not _type_ok(v, (float,)):
        bad(f"{where} is not a number")
    if not math.isfinite(v) or v < 0:
        bad(f"{where} is {v!r} seconds: a time is a finite number, not negative")
    if stage == "total" and repeats >= 1 and v <= 0:
        bad(f"{where} is {v!r} seconds: a timed run takes more than 0 seconds")


def validate(doc, where: str) -> None:
    """Raise UserError naming ``where`` unless ``doc`` is a result document."""
    def bad(msg):
        raise UserError(f"{where}: not a hmmbench result file: {msg}")

    if not isinstance(doc, dict):
        bad("top level is not an object")
    schema = doc.get("schema", 1)
    if not (isinstance(schema, int) and 1 <= schema <= SCHEMA_VERSION):
        bad(f"schema version {schema!r}; this hmmbench reads versions 1 to {SCHEMA_VERSION}")
    for k, t in TOP_LEVEL.items():
        if k not in doc:
            bad(f"missing '{k}'")
        if not isinstance(doc[k], t):
            bad(f"'{k}' should be {t.__name__}")
    for i, run in enumerate(doc["runs"]):
        if not isinstance(run, dict):
            bad(f"runs[{i}] is not an object")
        for k, types in RUN_FIELDS.items():
            if k not in run:
                bad(f"runs[{i}] lacks '{k}'")
            v = _unstring_float(run[k]) if k in _FLOAT_FIELDS else run[k]
            if not _type_ok(v, types):
                bad(f"runs[{i}].{k} has the wrong type ({type(run[k]).__name__})")
        if run["status"] not in STATUSES:
            bad(f"runs[{i}].status '{run['status']}' is not one of {', '.join(STATUSES)}")
        for k in ("timing_s", "timing_min_s", "timing_max_s"):
            for stage, v in run[k].items():
                _check_seconds(bad, f"runs[{i}].{k}.{stage}", v, stage, run["repeats"])
        samples = run.get(SAMPLES_FIELD)
        if samples is not None:
            if not isinstance(samples, dict):
                bad(f"runs[{i}].{SAMPLES_FIELD} is not an object")
            for stage, vals in samples.items():
                if not isinstance(vals, list):
                    bad(f"runs[{i}].{SAMPLES_FIELD}.{stage} is not a list of numbers")
                for j, v in enumerate(vals):
                    _check_seconds(bad, f"runs[{i}].{SAMPLES_FIELD}.{stage}[{j}]", v, stage, 1)
    not_run = doc.get("not_run", [])
    if not isinstance(not_run, list):
        bad("'not_run' should be list")
    for i, cell in enumerate(not_run):
        if not (isinstance(cell, dict) and all(isinstance(cell.get(k), str) for k in NOT_RUN_KEYS)):
            bad(f"not_run[{i}] is not a cell ({', '.join(NOT_RUN_KEYS)})")


#: Deepest nesting of arrays and objects a result file may have (hmmbench writes about 5).
MAX_DEPTH = 64


def _strict_float(text: str) -> float:
    """json.loads hook: a number too large for a float (``1e400``) is refused, not read as inf."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range (strict JSON: finite numbers "
                         "only)")
    return value


def _depth(doc) -> int:
    """How deeply arrays and objects nest in ``doc`` (without recursion)."""
    deepest, todo = 0, [(doc, 1)]
    while todo:
        node, d = todo.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                todo.extend((v, d + 1) for v in (node.values() if isinstance(node, dict)
                                                 else node))
    return deepest


def load(path) -> dict:
    """A result document from a file, validated; floats restored; UserError naming the file."""
    from .fileio import decode_text, read_input_bytes
    text = decode_text(read_input_bytes(path, "result file"), path,
                       "text: not a hmmbench result file")
    try:
        doc = json.loads(text, parse_constant=_strict_constant, parse_float=_strict_float)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not a hmmbench result file: invalid JSON "
                        f"({exc.msg})") from None
    except RecursionError:
        raise UserError(f"{path}: not a hmmbench result file: arrays or objects nested too "
                        f"deeply") from None
    except ValueError as exc:
        raise UserError(f"{path}: not a hmmbench result file: {exc}") from None
    if _depth(doc) > MAX_DEPTH:
        raise UserError(f"{path}: not a hmmbench result file: arrays or objects nested more "
                        f"than {MAX_DEPTH} deep")
    validate(doc, str(path))
    return restore_floats(doc)


def restore_floats(doc: dict) -> dict:
    """The document with the stored strings of non-finite floats turned back into floats (in
    place) and the defaults of older files filled in: what the report renders."""
    for run in doc["runs"]:
        for k in _FLOAT_FIELDS:
            if k in run:
                run[k] = _unstring_float(run[k])
        run.setdefault("chunking", doc["chunking"])
        run.setdefault("workload", "pairhmm")
    return doc
