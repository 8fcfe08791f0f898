"""When to stop repeating timed passes: registered stopping criteria (nvbench's
``stopping_criterion_base`` and its registry are the model).

A criterion is fed the seconds of each timed pass (:meth:`StoppingCriterion.add`) and says when
enough have run (:meth:`StoppingCriterion.stop_reason`: None to go on, else what stopped it,
which the cell's record keeps as ``stopped_by``). ``hmmbench run --stopping NAME[:KEY=VALUE,...]``
picks one by name; ``--repeat N`` is ``fixed:count=N``.

- ``stable`` (the default): the running median of the last 3 passes moves by less than
  ``spread`` (2 %);
- ``fixed``: exactly ``count`` passes;
- ``noise``: the 95 % interval of the median (distribution-free, from order statistics) is
  narrower than ``max_noise`` (2 %) of the median on either side.

Every criterion but ``fixed`` is bounded by ``min_repeats`` (3), ``max_repeats`` (1000) and
``max_time`` (``--max-time``, seconds of timed passes; a first pass that alone outlasts it is
the only one): what stopped a cell is then ``max_time`` or ``max_repeats``.
"""
from __future__ import annotations

import math
import statistics
from typing import ClassVar, Optional

from .. import stats
from ..errors import UserError

#: How many passes ``fixed`` may ask for at most (every count is finite).
MAX_COUNT = 1_000_000


class StoppingCriterion:
    """Says when a cell has had enough timed passes. Subclasses set ``name``, ``params`` and
    :meth:`enough`; :func:`register` makes them known by name."""

    name: ClassVar[str] = ""
    #: what the criterion does, one line (``hmmbench run --help``)
    summary: ClassVar[str] = ""
    #: parameter -> its default; every value is a finite number (ints stay ints)
    params: ClassVar[dict] = {}
    #: the bounds shared by the time-bounded criteria (``fixed`` has none)
    BOUNDS: ClassVar[dict] = {"min_repeats": 3, "max_repeats": 1000, "max_time": 10.0}
    bounded: ClassVar[bool] = True

    def __init__(self, **values):
        known = {**(self.BOUNDS if self.bounded else {}), **self.params}
        for k, v in values.items():
            if k not in known:
                raise UserError(f"stopping criterion '{self.name}' has no parameter '{k}' "
                                f"(it has: {', '.join(sorted(known)) or 'none'})")
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v) and v > 0):
                raise UserError(f"stopping criterion '{self.name}': {k} must be a positive "
                                f"finite number, not {v!r}")
            if isinstance(known[k], int) and v != int(v):
                raise UserError(f"stopping criterion '{self.name}': {k} must be a whole number")
        self.values = {k: type(known[k])(values.get(k, d)) for k, d in known.items()}
        if self.bounded and self.values["min_repeats"] > self.values["max_repeats"]:
            raise UserError(f"stopping criterion '{self.name}': min_repeats is above "
                            "max_repeats")
        self.times: list = []

    def __getattr__(self, key):
        try:
            return self.__dict__["values"][key]
        except KeyError:
            raise AttributeError(key) from None

    def add(self, seconds: float) -> None:
        """One more timed pass of ``seconds``."""
        self.times.append(float(seconds))

    def stop_reason(self, elapsed: float) -> Optional[str]:
        """None while more passes are wanted; else what stopped them: this criterion's name, or
        the bound that was reached (``max_repeats``, ``max_time``). ``elapsed``: seconds since
        the first timed pass began."""
        k = len(self.times)
        if not self.bounded:
            return self.name if self.enough() else None
        if k >= self.max_repeats:
            return "max_repeats"
        if k == 1 and self.times[0] >= self.max_time:
            return "max_time"
        if k < self.min_repeats:
            return None
        if self.enough():
            return self.name
        return "max_time" if elapsed >= self.max_time else None

    def enough(self) -> bool:
        raise NotImplementedError

    def spec(self) -> str:
        """The criterion as ``--stopping`` writes it, every parameter included."""
        return f"{self.name}:" + ",".join(f"{k}={v:g}" for k, v in self.values.items())


CRITERIA: dict = {}


def register(cls: type) -> type:
    """Make a StoppingCriterion subclass known by its name (a class decorator)."""
    if not cls.name or cls.name in CRITERIA:
        raise ValueError(f"stopping criterion name {cls.name!r} is empty or taken")
    CRITERIA[cls.name] = cls
    return cls


def running_median_spread(totals: list, window: int = 3) -> float:
    """Relative spread (max-min)/median of the running median over the last ``window`` passes."""
    if len(totals) < window:
        return math.inf
    meds = [statistics.median(totals[:j]) for j in range(len(totals) - window + 1,
                                                         len(totals) + 1)]
    mid = statistics.median(meds)
    return (max(meds) - min(meds)) / mid if mid > 0 else 0.0


@register
class Stable(StoppingCriterion):
    name = "stable"
    summary = "the running median of the last 3 passes moves by less than spread (0.02)"
    params = {"spread": 0.02}

    def enough(self) -> bool:
        return running_median_spread(self.times) < self.spread


@register
class Fixed(StoppingCriterion):
    name = "fixed"
    summary = "exactly count passes (--repeat N), whatever the time"
    params = {"count": 1}
    bounded = False

    def __init__(self, **values):
        super().__init__(**values)
        if self.count > MAX_COUNT:
            raise UserError(f"stopping criterion 'fixed': count is above {MAX_COUNT}")

    def enough(self) -> bool:
        return len(self.times) >= self.count


@register
class Noise(StoppingCriterion):
    name = "noise"
    summary = ("the 95 % interval of the median is within max_noise (0.02) of it on either "
               "side (at least 6 passes)")
    params = {"max_noise": 0.02}

    def enough(self) -> bool:
        return stats.median_noise(self.times) < self.max_noise


def parse_spec(spec: str) -> tuple:
    """(name, {parameter: number}) of ``NAME[:KEY=VALUE,...]``; UserError when malformed."""
    name, _, rest = (spec or "").partition(":")
    name = name.strip()
    if name not in CRITERIA:
        raise UserError(f"unknown stopping criterion '{name}' (valid: "
                        f"{', '.join(CRITERIA)})")
    values = {}
    for item in (x.strip() for x in rest.split(",")):
        if not item:
            continue
        key, eq, text = item.partition("=")
        try:
            number = float(text)
        except ValueError:
            number = None
        if not eq or number is None:
            raise UserError(f"--stopping {spec}: expected NAME[:KEY=VALUE,...] with numbers")
        values[key.strip()] = int(number) if number.is_integer() else number
    return name, values


def criterion_for(cfg) -> StoppingCriterion:
    """The criterion a RunConfig asks for: ``repeat`` -> fixed; else ``stopping`` (default
    stable), its bounds from the config (``min_repeats``, ``max_repeats``, ``max_time``,
    ``stable_spread``) unless the spec gives them."""
    if cfg.repeat:
        return Fixed(count=int(cfg.repeat))
    name, values = parse_spec(cfg.stopping or Stable.name)
    cls = CRITERIA[name]
    defaults = {"min_repeats": cfg.min_repeats, "max_repeats": cfg.max_repeats,
                "max_time": cfg.max_time} if cls.bounded else {}
    if cls is Stable:
        defaults["spread"] = cfg.stable_spread
    return cls(**{**defaults, **values})
