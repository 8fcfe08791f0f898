"""Extra kernel work, the regression gate's own check on a GPU: ``HMMBENCH_SUBWARP_EXTRA_WORK=PCT``
compiles every sub-warp kernel (CUDA and OpenCL) with ``SW_EXTRA_WORK=PCT``, which aligns the
first PCT % of each launch's items a second time and stores their results again, unchanged
(``kernels_common/pairhmm/subwarp.h``). The backend keeps its name -- as a regression would:
same name, slower code -- and every record of it shows the setting in its ``params``
(``extra_work_pct``), so the slowed files cannot pass for normal ones. The ``gate-gpu`` suite
times cuda-subwarp with 10 % against without (docs/regression-gate.md).
"""
from __future__ import annotations

import os

from ...errors import UserError

ENV = "HMMBENCH_SUBWARP_EXTRA_WORK"
PARAM = "extra_work_pct"


def extra_work_pct() -> int:
    """The percentage the environment asks for (0: none); a bad value is a usage error."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return 0
    try:
        pct = int(text)
    except ValueError:
        pct = -1
    if not 0 <= pct <= 100:
        raise UserError(f"{ENV}={text}: expected a whole percentage from 0 to 100")
    return pct


def defines() -> dict:
    """The kernel define of the extra work ({} without it: the kernels as they are)."""
    pct = extra_work_pct()
    return {"SW_EXTRA_WORK": pct} if pct else {}


class RecordsExtraWork:
    """Mixin of the sub-warp backends: ``params`` (what every record stores) carries
    ``extra_work_pct`` while the environment asks for extra work, and only then."""

    @property
    def params(self) -> dict:
        pct = extra_work_pct()
        if pct:
            self._params[PARAM] = pct
        else:
            self._params.pop(PARAM, None)
        return self._params

    @params.setter
    def params(self, value: dict) -> None:
        self._params = value
