"""The sub-warp kernel's header (kernels_common/pairhmm/subwarp_defs.h) and what mirrors it: the
host layout and launch arithmetic, the float32 constants of the model, and the NumPy emulation
(helpers/subwarp_scaling.py, whose Scheme reads the header): equal, so none drifts alone."""
from __future__ import annotations

import pytest

from helpers import subwarp_scaling as emu
from helpers.kernel_defines import defines, value
from hmmbench.pairhmm import model
from hmmbench.pairhmm.subwarp import layout

DEFS = "pairhmm/subwarp_defs.h"


def test_the_host_layout_matches_the_kernel_header():
    assert layout.PAD_CODE == value(DEFS, "SW_PAD_CODE") == emu.PAD
    assert layout.N_CODES == value(DEFS, "SW_CODES")
    assert model.N_CODE == value(DEFS, "SW_N_CODE") == emu.N_CODE
    assert layout.MAX_P == value(DEFS, "SW_MAX_P") == max(layout.SUPPORTED_P)
    assert layout.SW_LEVELS == value(DEFS, "SW_LEVELS")
    # the launch arithmetic (subwarp/call.py) counts groups per block of the kernel's SW_BLOCK
    assert layout.THREADS_PER_BLOCK == value(DEFS, "SW_BLOCK")


def test_the_float_constants_match_the_kernel_header():
    assert value(DEFS, "SW_INIT_C") == model.C32
    assert value(DEFS, "SW_LOG10_C") == pytest.approx(model.LOG10_C32, abs=1e-12)
    assert value(DEFS, "SW_INIT_C", SW_DOUBLE=1) == model.C64
    assert value(DEFS, "SW_LOG10_C", SW_DOUBLE=1) == pytest.approx(model.LOG10_C64, abs=1e-12)
    assert value(DEFS, "SW_F32_MIN_ACCEPTED") == model.F32_MIN_ACCEPTED


def test_the_emulations_exponent_scheme_is_the_kernels():
    s = emu.Scheme()
    assert s.every == 4 * value(DEFS, "SW_EXP_EVERY")         # unrolled iterations of 4 steps
    assert (s.low, s.high, s.target) == (value(DEFS, "SW_EXP_LOW"), value(DEFS, "SW_EXP_HIGH"),
                                         value(DEFS, "SW_EXP_TARGET"))
    assert s.stride == value(DEFS, "SW_EXP_STRIDE")
    assert s.shift == value(DEFS, "SW_EXP_SHIFT", SW_SCALED=layout.RECURRENCES["5op"]) > 0
    assert value(DEFS, "SW_EXP_SHIFT", SW_SCALED=layout.RECURRENCES["6op"]) == 0
    assert emu.MAX_GAP == value(DEFS, "SW_EXP_MAX_GAP")
    # the host adds SW_EXP_EVERY only off the header's default interval
    assert layout.exp_switches({}, s.every, 1, 1, 1) == {}
    assert layout.exp_switches({}, 24, 1, 1, 1) == {"SW_EXP_EVERY": 6}


def test_the_header_is_read_as_the_compiler_reads_it():
    """Conditionals, -D overrides, #undef and derived macros: what the parser must get right for
    the comparisons above to mean anything."""
    d = defines(DEFS, SW_P=16, SW_K=8)
    assert (d["SW_P"], d["SW_K"]) == ("16", "8")
    assert value(DEFS, "SW_TILE", SW_P=16, SW_K=8) == 128
    assert value(DEFS, "SW_GROUPS", SW_P=32) == 4                     # integer division
    assert value(DEFS, "SW_EXP_SCALE", SW_EXP_SCALE=1) == 1
    assert value(DEFS, "SW_EXP_SCALE", SW_EXP_SCALE=1, SW_DOUBLE=1) == 0   # #undef'd for double
    assert value(DEFS, "SW_EXP_TWO_FACTORS", SW_SCALED=2) == 0         # 150 - 24 <= 126
    assert value(DEFS, "SW_EXP_TWO_FACTORS", SW_SCALED=1) == 1
    assert value(DEFS, "SW_CODE_WINDOW", SW_EXP_SCALE=1, SW_P=16) == 1
    assert value(DEFS, "SW_CODE_WINDOW", SW_EXP_SCALE=1, SW_P=8) == 0
