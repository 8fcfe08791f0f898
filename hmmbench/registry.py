"""Backends as plugins, keyed by workload.

Built-in modules are listed by each workload package (``Workload.backend_specs``); third-party packages add theirs through the entry-point group
``hmmbench.backends.<workload>`` (each entry point names a callable returning Backend objects).
A module that fails to import becomes one 'unavailable' placeholder: one broken plugin never
stops the others.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Optional

from .backend import Backend, Execution
from .errors import UnknownName


def builtin_specs(workload: str) -> list:
    """The workload package's own "module:function" backend lists."""
    from .workload import get
    return list(get(workload).backend_specs)


def entry_point_group(workload: str) -> str:
    return f"hmmbench.backends.{workload}"


class BrokenPlugin(Backend):
    """Stands in for a plugin whose module could not be loaded."""
    api = "?"
    family = "?"

    def __init__(self, name: str, reason: str):
        super().__init__()
        self.name, self._reason = name, reason

    def unavailable_reason(self) -> Optional[str]:
        return self._reason

    def run(self, pairs) -> Execution:  # pragma: no cover - never called when unavailable
        raise RuntimeError(self._reason)


def _load(spec: str) -> Callable:
    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn or "backends")


def discover(workload: str = "pairhmm") -> list[Backend]:
    """Every backend of a workload, built-ins first, in a stable order; names are unique."""
    specs = builtin_specs(workload)
    try:
        for ep in metadata.entry_points(group=entry_point_group(workload)):
            if ep.value not in specs:
                specs.append(ep.value)
    except Exception:  # noqa: BLE001 - a broken environment must not hide the built-ins
        pass
    found: dict[str, Backend] = {}
    for spec in specs:
        try:
            for b in _load(spec)():
                found.setdefault(b.name, b)
        except Exception as exc:  # noqa: BLE001
            name = spec.split(":")[0]
            found.setdefault(name, BrokenPlugin(name, f"plugin failed to load: {exc}"))
    return list(found.values())


def select(names: Optional[list], workload: str = "pairhmm") -> list[Backend]:
    """Backends by name (or glob pattern such as ``cuda-*``); all of them when names is empty."""
    import fnmatch
    every = discover(workload)
    if not names:
        return every
    by_name = {b.name: b for b in every}
    chosen: list[Backend] = []
    for n in names:
        hits = [b for b in every if fnmatch.fnmatchcase(b.name, n)] if any(
            c in n for c in "*?[") else ([by_name[n]] if n in by_name else [])
        if not hits:
            raise UnknownName("backend", n, by_name)
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


@dataclass
class Availability:
    backend: Backend
    reason: Optional[str]

    @property
    def available(self) -> bool:
        return self.reason is None


def probe(backend: Backend) -> Availability:
    try:
        return Availability(backend, backend.unavailable_reason())
    except Exception as exc:  # noqa: BLE001
        return Availability(backend, f"availability probe failed: {exc}")
