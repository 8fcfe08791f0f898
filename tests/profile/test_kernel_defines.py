"""The profile kernels' headers (kernels_common/profile/) and what mirrors them on the host and
in the NumPy warp emulation (tests/profile/test_warp_emulation.py reads NEG16 from task.h)."""
from __future__ import annotations

import inspect

from cpu_reference.profile import constants, filters
from helpers.kernel_defines import value
from hmmbench.profile import model
from hmmbench.profile.device import layout


def test_transition_indices_match_the_kernels():
    for i, name in enumerate(constants.TRANSITIONS):
        assert value("profile/task.h", f"T_{name}") == i == getattr(constants, f"T_{name}")


def test_the_int16_minus_infinity_matches_the_kernels():
    assert value("profile/task.h", "NEG16") == filters.NEG16 == model.WORD_NEG_INF


def test_lane_and_thread_counts_match_the_kernels():
    lanes = inspect.signature(layout.pack_lanes).parameters["lanes"].default
    assert value("profile/warp.h", "GROUP") == lanes
    assert value("profile/generic.h", "THREADS", MODEL_M=100) == layout.GENERIC_THREADS
