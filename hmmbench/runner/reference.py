"""The float64 reference results every backend is checked against: computed once per dataset (or
per deterministic sample), kept in memory and in an on-disk cache.

A cache entry is one ``.npz`` file (values and metadata together, written atomically, so that
processes filling one cache at once each see whole entries of one writer; computed under the
entry's lock, so that one of them computes it and the others read it). Its metadata carries
the sha256 of the values and of the inputs they were computed from (dataset sha256, which part,
the reference's source digest); an entry whose values or inputs do not match is reported once
(``notify``) and recomputed, never trusted.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..backend import Backend
from ..cachedir import entry_lock, user_cache_dir
from ..errors import InputError
from ..fileio import atomic_open, read_input_bytes
from ..registry import probe
from .config import RunConfig
from .units import n_items

#: Bump when the cache file layout (not the reference's maths) changes.
CACHE_FORMAT = 2


def _source_digest(backend: Backend) -> str:
    """Hash of the reference backend's package sources: editing the reference invalidates caches."""
    import importlib
    modname = type(backend).__module__
    top = modname.split(".")[0]
    h = hashlib.sha256(f"{CACHE_FORMAT}:{modname}:{type(backend).__qualname__}".encode())
    try:
        from ..hostinfo import package_files
        files = package_files(top)
        pkg = importlib.import_module(top)
        if not files and getattr(pkg, "__file__", None):
            files = [Path(pkg.__file__)]
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    except Exception:  # noqa: BLE001 - no sources: fall back to the class identity only
        pass
    h.update(str(getattr(backend, "version", "")).encode())
    return h.hexdigest()[:16]


def values_sha256(values: np.ndarray) -> str:
    """sha256 of float64 values (little-endian bytes, so the same on every host)."""
    return hashlib.sha256(np.ascontiguousarray(values, dtype="<f8").tobytes()).hexdigest()


def inputs_sha256(dataset_sha: str, what: str, source_key: str) -> str:
    """sha256 of what a cache entry was computed from."""
    return hashlib.sha256(f"{dataset_sha}:{what}:{source_key}".encode()).hexdigest()


def _atomic_save(path: Path, values: np.ndarray, meta: dict) -> None:
    with atomic_open(path, binary=True) as fh:
        np.savez(fh, values=values, meta=np.array(json.dumps(meta)))


def _load_entry(path: Path) -> tuple:
    """(values, meta) of a cache file; ValueError/OSError when it cannot be read as one."""
    # read through open_input: a FIFO or device in the cache is refused, never waited on
    with np.load(io.BytesIO(read_input_bytes(path)), allow_pickle=False) as npz:
        values, meta = npz["values"], json.loads(str(npz["meta"]))
    if not isinstance(meta, dict):
        raise ValueError("metadata is not an object")
    return values, meta


class ReferenceStore:
    """Float64 reference results per dataset (whole set, or deterministic samples), disk-cached."""

    def __init__(self, backend: Optional[Backend], reason: Optional[str], cfg: RunConfig):
        self.backend, self.reason, self.cfg = backend, reason, cfg
        if cfg.use_cache:
            self.dir = Path(cfg.cache_dir) if cfg.cache_dir else user_cache_dir() / "reference"
        else:
            self.dir = None
        self._key = _source_digest(backend) if backend is not None else ""
        self._memory: dict = {}
        #: where a damaged cache entry is reported (the runner points it at its progress notes)
        self.notify: Callable[[str], None] = lambda text: None
        self._reported: set = set()

    @classmethod
    def for_config(cls, cfg: RunConfig) -> "ReferenceStore":
        from ..errors import UserError
        from ..registry import select
        try:
            backend = select([cfg.reference], cfg.workload)[0]
        except UserError as exc:
            return cls(None, str(exc), cfg)
        reason = probe(backend).reason
        return cls(None if reason else backend, reason, cfg)

    @property
    def available(self) -> bool:
        return self.backend is not None

    def _path(self, sha: str, what: str) -> Optional[Path]:
        if self.dir is None:
            return None
        return self.dir / f"{sha[:32]}-{self._key}-{what}.npz"

    def lookup(self, sha: str, what: str) -> Optional[tuple]:
        """(values, seconds or None) from memory or a verified disk entry, else None."""
        if (sha, what) in self._memory:
            return self._memory[(sha, what)]
        path = self._path(sha, what)
        if path is None or not os.path.lexists(path):
            return None
        try:
            values, meta = _load_entry(path)
            problem = self._verify(values, meta, sha, what)
        except InputError as exc:            # a FIFO, directory, symlink loop...
            problem = exc.message
        except Exception as exc:  # noqa: BLE001 - any damage (BadZipFile, ...) means recompute
            problem = f"unreadable ({type(exc).__name__})"
        if problem:
            if path not in self._reported:
                self._reported.add(path)
                self.notify(f"reference cache {path.name}: {problem}; recomputing")
            return None
        self._memory[(sha, what)] = (values, meta.get("seconds"))
        return self._memory[(sha, what)]

    def _verify(self, values: np.ndarray, meta: dict, sha: str, what: str) -> Optional[str]:
        """None when the entry is what it claims, else what is wrong with it."""
        if meta.get("inputs_sha256") != inputs_sha256(sha, what, self._key):
            return "computed from other inputs"
        if values.dtype != np.float64 or values.ndim != 1:
            return f"values of the wrong kind ({values.dtype}, {values.ndim}-d)"
        if meta.get("values_sha256") != values_sha256(values):
            return "values do not match their sha256 (damaged or edited)"
        return None

    def store(self, sha: str, what: str, values: np.ndarray, seconds: float) -> None:
        values = np.asarray(values, dtype=np.float64)
        self._memory[(sha, what)] = (values, seconds)
        path = self._path(sha, what)
        if path is not None:
            from ..hostinfo import cpu_model
            meta = {"seconds": seconds, "cpu": cpu_model(), "backend": self.backend.name,
                    "dataset_sha256": sha, "what": what, "source_key": self._key,
                    "inputs_sha256": inputs_sha256(sha, what, self._key),
                    "values_sha256": values_sha256(values)}
            try:
                _atomic_save(path, values, meta)
            except OSError:
                pass  # an unwritable cache only costs time

    def compute(self, sha: str, what: str, pairs, force: bool = False) -> tuple:
        """(values, seconds, computed_now). Under the entry's lock: processes sharing the cache
        (cluster workers, parallel runs) compute one entry once, the others wait and read it."""
        with self._lock(sha, what):
            return self._compute(sha, what, pairs, force)

    def _lock(self, sha: str, what: str):
        path = self._path(sha, what)
        if path is None:
            return contextlib.nullcontext()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return entry_lock(path).acquire()   # released when the block ends
        except OSError:
            return contextlib.nullcontext()     # an unwritable cache only costs time

    def _compute(self, sha: str, what: str, pairs, force: bool) -> tuple:
        hit = None if force else self.lookup(sha, what)
        if hit is not None and len(hit[0]) == n_items(pairs):
            return hit[0], hit[1], False
        t0 = time.perf_counter()
        values = np.asarray(self.backend.run(pairs).log10, dtype=np.float64)
        seconds = time.perf_counter() - t0
        if len(values) != n_items(pairs):
            raise RuntimeError(f"reference returned {len(values)} values for {n_items(pairs)} "
                               "items")
        self.store(sha, what, values, seconds)
        return values, seconds, True
