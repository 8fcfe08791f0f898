"""The float64 reference results every backend is checked against: computed once per dataset (or
per deterministic sample), kept in memory and in an on-disk cache."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..backend import Backend
from ..fileio import atomic_open
from ..registry import probe
from .config import RunConfig
from .units import n_items

#: Bump when the cache file layout (not the reference's maths) changes.
CACHE_FORMAT = 1


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


def _atomic_save_npy(path: Path, values: np.ndarray, meta: dict) -> None:
    with atomic_open(path, binary=True) as fh:
        np.save(fh, values)
    with atomic_open(path.with_suffix(".json")) as fh:
        fh.write(json.dumps(meta))


class ReferenceStore:
    """Float64 reference results per dataset (whole set, or deterministic samples), disk-cached."""

    def __init__(self, backend: Optional[Backend], reason: Optional[str], cfg: RunConfig):
        self.backend, self.reason, self.cfg = backend, reason, cfg
        if cfg.use_cache:
            from ..hostinfo import user_cache_dir
            self.dir = Path(cfg.cache_dir) if cfg.cache_dir else user_cache_dir() / "reference"
        else:
            self.dir = None
        self._key = _source_digest(backend) if backend is not None else ""
        self._memory: dict = {}

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
        return self.dir / f"{sha[:32]}-{self._key}-{what}.npy"

    def lookup(self, sha: str, what: str) -> Optional[tuple]:
        """(values, seconds or None) from memory or disk, else None."""
        if (sha, what) in self._memory:
            return self._memory[(sha, what)]
        path = self._path(sha, what)
        if path is not None and path.exists():
            try:
                values = np.load(path)
                meta = json.loads(path.with_suffix(".json").read_text())
                self._memory[(sha, what)] = (values, meta.get("seconds"))
                return self._memory[(sha, what)]
            except (OSError, ValueError):
                pass  # a damaged cache entry is recomputed
        return None

    def store(self, sha: str, what: str, values: np.ndarray, seconds: float) -> None:
        values = np.asarray(values, dtype=np.float64)
        self._memory[(sha, what)] = (values, seconds)
        path = self._path(sha, what)
        if path is not None:
            from ..hostinfo import cpu_model
            try:
                _atomic_save_npy(path, values, {"seconds": seconds, "cpu": cpu_model(),
                                                "backend": self.backend.name})
            except OSError:
                pass  # an unwritable cache only costs time

    def compute(self, sha: str, what: str, pairs, force: bool = False) -> tuple:
        """(values, seconds, computed_now)."""
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
