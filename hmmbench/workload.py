"""What the workload-free core (registry, runner, cli) asks of a workload package.

A workload (``pairhmm``, ``profile``) is a package under ``hmmbench/`` with its data model,
datasets, layout steps and one host-glue module per API; its ``workload.py`` exposes one
:class:`Workload` object named ``WORKLOAD``. The core never imports a workload package by name:
it loads ``WORKLOADS[name]`` (or a third-party entry point of the ``hmmbench.workloads`` group)
when a command asks for that workload, so imports run one way: core <- workloads <- cli.
"""
from __future__ import annotations

import argparse
import importlib
from importlib import metadata
from typing import Any, Callable, Mapping, Optional

from .errors import UserError
from .options import RunOptions, ScoreOptions

#: Built-in workloads: name -> "module:attribute" of their Workload object.
BUILTIN_WORKLOADS = {
    "pairhmm": "hmmbench.pairhmm.workload:WORKLOAD",
    "profile": "hmmbench.profile.workload:WORKLOAD",
}
ENTRY_POINT_GROUP = "hmmbench.workloads"
DEFAULT = "pairhmm"


class Workload:
    """One workload's answers to the core. Subclasses set the attributes and the hooks."""

    name: str = ""
    #: the backend every other backend of this workload is cross-checked against
    reference: str = ""
    #: what one result value is of (record reasons: "checked a sample of N pairs")
    item_noun: str = "items"
    #: items a sampled cross-check covers per chunk when the user gives no --sample-pairs
    sample_items: int = 2000
    #: "module:function" pairs returning Backend lists (third parties add entry points of
    #: ``hmmbench.backends.<name>``)
    backend_specs: tuple = ()
    #: run/score options only this workload takes (argparse dest -> flag), added by add_arguments
    own_options: dict = {}
    #: result values below this are past the number format's range, and a backend agrees with
    #: the reference there when its value is below it too (see runner.check.CheckTally)
    range_floor: Optional[float] = None

    # --- command-line ----------------------------------------------------------------------------
    def add_arguments(self, command: str, parser: argparse.ArgumentParser) -> None:
        """Add this workload's own options to ``run`` or ``score``."""

    def parse_options(self, values: Mapping) -> Any:
        """This workload's own options (``own_options``) as the typed object that
        ``RunOptions.workload_options`` carries, from values by argparse dest (None: it has
        none)."""
        return None

    def plan(self, options: RunOptions, backends: list) -> tuple:
        """(datasets, extra run_benchmark keywords) of ``hmmbench run``."""
        raise NotImplementedError

    def score(self, options: ScoreOptions, backend) -> int:
        """``hmmbench score``: write the scores file, return how many values it holds."""
        raise NotImplementedError

    def catalog_tables(self) -> list:
        """The catalogs of ``hmmbench list`` / ``datasets list``: :class:`hmmbench.report.Listing`
        tables (datasets, models), printed by the terminal printer."""
        return []

    def length_point(self, dataset: str) -> Optional[tuple]:
        """(series, L) when ``dataset`` is one of a series of generated sets whose items all
        have one length L (the points of a peak curve: GCUPS over L), else None."""
        return None

    def fetch(self, name: str):
        raise UserError(f"the {self.name} workload has no downloadable datasets")

    def launches(self, unit, mode: str) -> list:
        """The unit cut into launches by a chunking mode (default: one launch)."""
        if mode not in ("original", "merged"):
            raise UserError(f"chunking '{mode}' does not apply to the {self.name} workload")
        return [unit]

    def check_chunking(self, mode: str) -> None:
        """Raise UserError for a chunking mode this workload cannot cut by."""

    def launch_items(self, mode: str) -> int:
        """Items per launch that a chunking mode asks for (0: none). The runner joins a lazy
        set's consecutive pieces into launches of at most that many items, so that a launch
        size past one piece means what it says."""
        return 0

    # --- sharding (hmmbench.cluster) ------------------------------------------------------------
    def shard_costs(self, unit):
        """The DP cells of each indivisible atom of a unit, in order (pair-HMM: a batch, i.e. an
        active region; profile: a sequence): shards are contiguous runs of atoms."""
        raise UserError(f"the {self.name} workload cannot be sharded over a cluster")

    def shard(self, unit, start: int, stop: int):
        """Atoms ``start:stop`` of a unit as a unit of its own; the shards' results, joined in
        order, are the unit's results."""
        raise UserError(f"the {self.name} workload cannot be sharded over a cluster")

    def planned_units(self, dataset, join: int):
        """A set generated piece by piece as a sharded run's workers make it -- ``join``
        consecutive pieces joined into a unit -- known before anything is generated: an object
        with ``units`` (one entry a unit), ``costs(unit)`` (its atoms' costs, as
        :meth:`shard_costs` gives them), ``shape(runs, groups=False)`` (the shape of runs
        ``(unit, start, stop)`` of atoms, each count the most of any) and ``making_bytes``
        (the most a process holds while it makes one). None: not known."""
        return None

    def unit_shape(self, dataset, mode: str = "merged"):
        """What a backend's memory estimate reads (:meth:`Backend.memory_need`): the largest
        unit it is given in chunking ``mode``, from the dataset's name where that says it, else
        from the loaded unit; None: unknown."""
        return None

    def loaded_shape(self, unit, detailed: bool = True):
        """A loaded unit's shape (what :meth:`unit_shape` says before loading); ``detailed``
        False: only what its bytes need, when that is quicker to read. None: unknown."""
        return None

    def sample_shape(self, shape, items: int):
        """The shape of a sample of ``items`` items drawn from a unit of ``shape`` (the
        cross-check's, ``unit.subset``), its ``making_bytes`` what drawing it holds; None:
        unknown (the reference is then budgeted on the whole unit)."""
        return None

    def sample_shapes(self, dataset, mode: str, per_piece: int,
                      join: Optional[int] = None) -> Optional[list]:
        """The shapes of the cross-check's samples, one per unit, drawn as the check draws them
        (``per_piece`` items of each piece a unit joins, the unit's index the seed) from what
        is known of the set without generating it: the units of chunking ``mode``, or a
        sharded run's (``join`` pieces a unit). None: unknown (:meth:`sample_shape` then)."""
        return None

    def measured_unit(self, cell: str) -> tuple:
        """(unit, its shape, the shape the run's check reads before loading it -- None: the
        same) of a cell named for a memory measurement (:mod:`hmmbench.memory_peak`)."""
        raise UserError(f"the {self.name} workload has no memory measurement")

    def run_defaults(self) -> dict:
        """RunConfig fields this workload sets (its reference, its name)."""
        return {"reference": self.reference, "workload": self.name}


def _load(spec: str):
    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr or "WORKLOAD")


def names() -> tuple:
    """Every workload name: built-ins first, then entry points."""
    found = list(BUILTIN_WORKLOADS)
    try:
        found += [ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
                  if ep.name not in found]
    except Exception:  # noqa: BLE001 - a broken environment must not hide the built-ins
        pass
    return tuple(found)


_LOADED: dict = {}


def get(name: Optional[str]) -> Workload:
    """The Workload called ``name``; an unknown name is a usage error (exit 2)."""
    name = name or DEFAULT
    if name not in _LOADED:
        spec = BUILTIN_WORKLOADS.get(name)
        if spec is None:
            try:
                spec = next((ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
                             if ep.name == name), None)
            except Exception:  # noqa: BLE001
                spec = None
        if spec is None:
            raise UserError(f"unknown workload '{name}' (valid: {', '.join(names())})")
        _LOADED[name] = _load(spec)
    return _LOADED[name]


def every() -> list:
    return [get(n) for n in names()]


def foreign_option(values: Mapping, workload: Workload,
                   every_workload: Callable = every) -> Optional[str]:
    """The first option given on the command line (``values`` by argparse dest) that belongs to
    another workload, as "--model belongs to the profile workload"; None when there is none."""
    for other in every_workload():
        if other.name == workload.name:
            continue
        for dest, flag in other.own_options.items():
            if values.get(dest) and flag not in workload.own_options.values():
                return (f"{flag} belongs to the {other.name} workload "
                        f"(--workload {other.name})")
    return None
