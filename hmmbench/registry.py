"""Backends as plugins, keyed by workload.

Built-in modules are listed by each workload package (``Workload.backend_specs``); third-party packages add theirs through the entry-point group
``hmmbench.backends.<workload>`` (each entry point names a callable returning Backend objects).
A module that fails to import becomes one 'unavailable' placeholder: one broken plugin never
stops the others.

Parameter axes: a backend module may also define ``families()``, its :class:`BackendFamily`
objects: a backend with tunable parameters (inter-task tile, sub-warp p x k, block size ...) and
their allowed values. The module's ``backends()`` lists each family's presets under their historic
names (``cuda-inter-tile8``, ``cuda-subwarp-p8k16``): aliases of the family with fixed parameters.
``select(names, axes={"tile": ["2", "4"]})`` sweeps the named backends over the axes they declare
(the cartesian product); every variant records its parameter values in ``params``.
"""
from __future__ import annotations

import fnmatch
import functools
import importlib
import itertools
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import Callable, Optional

from .backend import Backend, Execution
from .errors import UnknownName, UserError
from .workload import get


def builtin_specs(workload: str) -> list:
    """The workload package's own "module:function" backend lists."""
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


def _axis_text(value) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


@dataclass
class BackendFamily:
    """A backend with tunable parameters.

    ``axes``: {parameter: allowed values}; ``defaults``: the value of every axis when not given;
    ``build(name=..., **params)`` makes the backend; ``alias(params)`` names a variant (None: the
    generic ``family[axis=value,...]``); ``presets``: the parameter sets
    listed as backends of their own.
    """
    name: str
    axes: dict
    defaults: dict
    build: Callable
    alias: Optional[Callable] = None
    presets: tuple = field(default_factory=tuple)

    def parse(self, axis: str, text: str):
        """An allowed value of ``axis`` from its command-line spelling (bools as 0/1)."""
        if axis not in self.axes:
            raise UserError(f"backend family '{self.name}' has no axis '{axis}' (axes: "
                            f"{', '.join(self.axes)})")
        for v in self.axes[axis]:
            if text.strip().lower() == _axis_text(v).lower() or \
                    (isinstance(v, bool) and text.strip().lower() == str(v).lower()):
                return v
        raise UserError(f"--axis {axis}={text}: not a value of '{self.name}' (allowed: "
                        f"{', '.join(_axis_text(v) for v in self.axes[axis])})")

    def variant_name(self, params: dict) -> str:
        name = self.alias(params) if self.alias else None
        if name:
            return name
        return f"{self.name}[{','.join(f'{k}={_axis_text(v)}' for k, v in params.items())}]"

    def with_params(self, **given) -> Backend:
        """The variant with ``given`` parameters (the rest at their defaults)."""
        for k, v in given.items():
            if k not in self.axes or v not in self.axes[k]:
                raise UserError(f"backend family '{self.name}': {k}={v!r} is not allowed "
                                f"(axes: {self.describe_axes()})")
        params = {k: given.get(k, d) for k, d in self.defaults.items()}
        b = self.build(name=self.variant_name(params), **params)
        b.params.update(params)        # every row records its axis values
        b.variant_of = (self, params)
        return b

    def preset_backends(self) -> list:
        """The presets as backends (what a module's ``backends()`` lists)."""
        return [self.with_params(**p) for p in self.presets]

    def every_params(self):
        """Every allowed parameter set, axes in declaration order."""
        keys = list(self.axes)
        for combo in itertools.product(*(self.axes[k] for k in keys)):
            yield dict(zip(keys, combo))

    def describe_axes(self) -> str:
        return "; ".join(f"{k}={','.join(_axis_text(v) for v in vals)} "
                         f"(default {_axis_text(self.defaults.get(k))})"
                         for k, vals in self.axes.items())


def _load(spec: str) -> Callable:
    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn or "backends")


def _load_families(spec: str) -> list:
    """The ``families()`` of a backend module (none when it defines no such function)."""
    mod = importlib.import_module(spec.partition(":")[0])
    return list(getattr(mod, "families", lambda: [])())


@functools.lru_cache(maxsize=None)
def _plugin_values(group: str, search_path: tuple) -> tuple:
    """The values of the entry points of ``group`` found on ``search_path`` (sys.path), read
    once: the scan opens every installed distribution's metadata, and one command discovers
    the backends many times (each ``select``)."""
    return tuple(ep.value for ep in metadata.entry_points(group=group))


def _specs(workload: str) -> list:
    specs = builtin_specs(workload)
    try:
        for value in _plugin_values(entry_point_group(workload), tuple(sys.path)):
            if value not in specs:
                specs.append(value)
    except Exception:  # noqa: BLE001 - a broken environment must not hide the built-ins
        pass
    return specs


def _entries(workload: str) -> tuple:
    """({name: Backend}, {name: BackendFamily}) of every plugin."""
    found: dict[str, Backend] = {}
    families: dict[str, BackendFamily] = {}
    for spec in _specs(workload):
        try:
            for b in _load(spec)():
                found.setdefault(b.name, b)
            for fam in _load_families(spec):
                families.setdefault(fam.name, fam)
        except Exception as exc:  # noqa: BLE001
            name = spec.split(":")[0]
            found.setdefault(name, BrokenPlugin(name, f"plugin failed to load: {exc}"))
    return found, families


def discover(workload: str = "pairhmm") -> list[Backend]:
    """Every backend of a workload, built-ins first, in a stable order; names are unique."""
    return list(_entries(workload)[0].values())


def families(workload: str = "pairhmm") -> dict:
    """The backend families (backends with parameter axes) of a workload, by name."""
    return _entries(workload)[1]


def _by_alias(fams: dict, name: str) -> Optional[Backend]:
    """The variant of a family whose name (alias or generic) is ``name``. A glob pattern
    (``*``, ``?``) names none; a name with brackets is looked for in the family it starts with
    first (generic names are ``family[axis=value,...]``), then in every family."""
    if "*" in name or "?" in name:
        return None
    for fam in fams.values():
        if name == fam.name:
            return fam.with_params()
    prefix = name.split("[", 1)[0] if "[" in name else None
    first = [f for f in fams.values() if f.name == prefix]
    for fam in first + [f for f in fams.values() if f.name != prefix]:
        for params in fam.every_params():
            if fam.variant_name(params) == name:
                return fam.with_params(**params)
    return None


def sweep(chosen: list, axes: dict) -> list:
    """Each backend of a family crossed with the values of the axes its family declares;
    backends without them stay as they are. ``axes``: {axis: [value text, ...]}."""
    declared = {a for b in chosen if getattr(b, "variant_of", None)
                for a in b.variant_of[0].axes}
    missing = [a for a in axes if a not in declared]
    if missing:
        raise UserError(f"--axis {missing[0]}: no selected backend has this axis (axes of the "
                        f"selected backends: {', '.join(sorted(declared)) or 'none'})")
    out: dict[str, Backend] = {}
    for b in chosen:
        fam, base = getattr(b, "variant_of", None) or (None, None)
        mine = {a: vals for a, vals in axes.items() if fam is not None and a in fam.axes}
        if not mine:
            out.setdefault(b.name, b)
            continue
        keys = list(mine)
        for combo in itertools.product(*([fam.parse(a, v) for v in mine[a]] for a in keys)):
            v = fam.with_params(**{**base, **dict(zip(keys, combo))})
            out.setdefault(v.name, v)
    return list(out.values())


def select(names: Optional[list], workload: str = "pairhmm",
           axes: Optional[dict] = None) -> list[Backend]:
    """Backends by name (or glob pattern such as ``cuda-*``, or a family's name: its default
    variant); all of them when names is empty; then swept over ``axes`` (see :func:`sweep`)."""
    every = discover(workload)
    fams = families(workload) if (axes or names) else {}
    by_name = {b.name: b for b in every}
    chosen: list[Backend] = []
    for n in names or []:
        hit = by_name.get(n) or _by_alias(fams, n)   # generic variant names hold brackets
        hits = [hit] if hit is not None else [b for b in every if fnmatch.fnmatchcase(b.name, n)]
        if not hits:
            raise UnknownName("backend", n, list(by_name) + list(fams))
        chosen.extend(h for h in hits if h.name not in {c.name for c in chosen})
    if not names:
        chosen = every
    return sweep(chosen, axes) if axes else chosen


@dataclass
class Availability:
    backend: Backend
    reason: Optional[str]

    @property
    def available(self) -> bool:
        return self.reason is None


def probe(backend: Backend, listing: bool = False) -> Availability:
    """Whether ``backend`` can run here. ``listing``: for ``hmmbench list``, through the
    backend's ``listing_reason`` where it has one (the same answer without the work only a run
    needs, such as probe builds of its kernels for the parameters a run records)."""
    ask = getattr(backend, "listing_reason", None) if listing else None
    try:
        return Availability(backend, (ask or backend.unavailable_reason)())
    except Exception as exc:  # noqa: BLE001
        return Availability(backend, f"availability probe failed: {exc}")
