"""Named suites: the device studies as data, each step one ``hmmbench run``.

A suite is a list of steps; a step is datasets x backends x options of one ``hmmbench run`` and
the name of the result file it writes (``<out>/<step>.json``). The suites themselves are plain
data in :mod:`hmmbench.suites.catalog`; this module turns a step into the ``hmmbench run``
argument list, so that ``hmmbench suite run`` goes through exactly the code path (and records
exactly the command line) of a hand-typed ``hmmbench run``. A step may set environment
variables for its run alone (``env``), and a step may instead be ``hmmbench compare`` of two
earlier steps' files (``compare``), with the exit status it should end with (``expect``: 1 where
the gate must catch a slowdown); it writes no file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UnknownName, UserError
from ..workload import DEFAULT as DEFAULT_WORKLOAD
from .catalog import SUITES

#: where ``suite run`` writes when no --out is given: results/runs/<suite>/
DEFAULT_ROOT = Path("results") / "runs"


@dataclass(frozen=True)
class Step:
    """One ``hmmbench run``: its result file is ``<out>/<name>.json``."""
    name: str
    datasets: tuple = ()
    backends: tuple = ()
    #: ``hmmbench run`` options without the dashes: {"repeat": 3, "chunking": ["original",
    #: "merged"]}; a list repeats the option, True is a bare flag
    options: dict = field(default_factory=dict)
    workload: str = DEFAULT_WORKLOAD
    #: environment variables set for this step's run only (printed before the command)
    env: dict = field(default_factory=dict)
    #: (baseline step, candidate step): this step is ``hmmbench compare`` of their files
    compare: tuple = ()
    #: the exit status the step should end with (a compare that must fail: 1)
    expect: int = 0

    @property
    def writes(self) -> bool:
        """Whether the step writes ``<out>/<name>.json`` (a compare step writes nothing)."""
        return not self.compare

    def argv(self, out_dir) -> list:
        """The ``hmmbench run`` (or ``compare``) arguments, without the program name."""
        if self.compare:
            return ["compare", *(str(Path(out_dir) / f"{name}.json") for name in self.compare),
                    *self._options()]
        args = ["run"] + (["--workload", self.workload] if self.workload != DEFAULT_WORKLOAD
                          else [])
        for d in self.datasets:
            args += ["-d", d]
        for b in self.backends:
            args += ["-b", b]
        return args + self._options() + ["--json", str(Path(out_dir) / f"{self.name}.json")]

    def _options(self) -> list:
        args = []
        for key, value in self.options.items():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                args += [f"--{key}"] if v is True else [f"--{key}", str(v)]
        return args


@dataclass(frozen=True)
class Suite:
    name: str
    about: str
    steps: tuple


def _suite(name: str, spec: dict) -> Suite:
    steps = tuple(Step(name=s["name"], datasets=tuple(s.get("datasets", ())),
                       backends=tuple(s.get("backends", ())), options=dict(s.get("options", {})),
                       workload=s.get("workload", DEFAULT_WORKLOAD),
                       env=dict(s.get("env", {})), compare=tuple(s.get("compare", ())),
                       expect=int(s.get("expect", 0))) for s in spec["steps"])
    if len({s.name for s in steps}) != len(steps):
        raise ValueError(f"suite '{name}': two steps write the same result file")
    for i, step in enumerate(steps):
        earlier = {s.name for s in steps[:i] if s.writes}
        if step.compare and (len(step.compare) != 2 or not set(step.compare) <= earlier):
            raise ValueError(f"suite '{name}' step '{step.name}': compares what no two earlier "
                             "steps of the suite write")
    return Suite(name=name, about=spec["about"], steps=steps)


def names() -> tuple:
    return tuple(SUITES)


def get(name: str) -> Suite:
    """The suite called ``name``; an unknown name is a usage error (exit 2)."""
    if name not in SUITES:
        raise UnknownName("suite", name, SUITES, hint="; `hmmbench suite list` shows them")
    return _suite(name, SUITES[name])


def every() -> list:
    return [get(n) for n in names()]


def out_dir(suite: Suite, out) -> Path:
    """--out DIR, else results/runs/<suite>/."""
    path = Path(out) if out else DEFAULT_ROOT / suite.name
    if path.exists() and not path.is_dir():
        raise UserError(f"{path}: --out is not a directory")
    return path
