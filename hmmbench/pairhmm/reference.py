"""The NumPy reference backends: ``numpy`` (float64, the cross-check reference) and ``numpy-f32``."""
from __future__ import annotations

from cpu_reference.pairhmm.forward import (DEFAULT_GROUP_ELEMENTS, DEFAULT_SLACK, finish,
                                           forward_sums, layout)

from ..backend import Backend, Execution, StageClock
from ..hostinfo import cpu_model
from .model import PairSet


class NumpyBackend(Backend):
    """Vectorized anti-diagonal wavefront over length-sorted groups of pairs
    (``cpu_reference.pairhmm.forward``).

    prep = layout (sort, group, then each group's skewed arrays), kernel = the DP (plus, in
    float32, the float64 recompute of underflowing pairs); nothing moves, so h2d = d2h = 0.
    """
    api = "numpy"
    family = "reference"

    def __init__(self, name: str, precision: str, *, max_elements: int = DEFAULT_GROUP_ELEMENTS,
                 slack: float = DEFAULT_SLACK):
        super().__init__(max_elements=max_elements, slack=slack)
        self.name, self.precision = name, precision

    def device_name(self) -> str:
        return cpu_model()                             # /proc/cpuinfo's model name

    def run(self, pairs: PairSet) -> Execution:
        clock = StageClock()
        with clock("prep"):
            lay = layout(pairs, self.precision, max_elements=self.params["max_elements"],
                         slack=self.params["slack"])
        sums = forward_sums(lay, clock)
        with clock("kernel"):
            log10, redo = finish(pairs, lay, sums)
        return Execution(log10=log10, timing=clock.timing, n_fallback=len(redo),
                         info={"groups": len(lay.groups)})


def backends() -> list:
    return [NumpyBackend("numpy", "float64"), NumpyBackend("numpy-f32", "float32")]
