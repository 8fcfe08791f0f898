"""The ``cuda-subwarp`` variants and families of ``SubwarpBackend`` (``cuda.py``).

Variants (each switches one design element off, so ``hmmbench run`` shows what it buys):
``cuda-subwarp`` (auto bins, exponents), ``-f64rescue`` (no exponents: the float64 recompute of
every pair under 1e-28), ``-exp-long`` (exponents for reads over 256 only), ``-noemistable``
(compare-and-select emissions), ``-6op`` (the 6-instruction recurrence instead of the 5-instruction
one), ``-gatkform`` (GATK's 8-instruction recurrence), ``-nobins`` (one p32k16 kernel for every
read, multi-tile beyond 512), ``-nostreams`` (bins serialized on one stream), ``-p8k16`` (one
fixed configuration); ``-batched``, ``-exp-all`` and ``-exp-long`` as their descriptions say.
Families (parameter axes, ``hmmbench run -b FAMILY --axis ...``): ``cuda-subwarp-fixed`` (p x k),
``cuda-subwarp-auto`` (recurrence x register cap), ``cuda-subwarp-exp-above`` (where exponents
start).
"""
from __future__ import annotations

from ...backend import Backend
from ...errors import UserError
from ...registry import BackendFamily
from .cuda import SubwarpBackend
from .layout import (DEFAULT_BINS, GATKFORM_BINS, NOTABLE_BINS, RECURRENCES,
                             SMALL_TIERS, SUPPORTED_K, SUPPORTED_P)


#: cuda-subwarp's underflow handling: exponents in the bins of reads over 512, where pairs
#: underflow in numbers (14-47 % of them at 640..1,024 bases); the bins of shorter reads run the
#: float32 kernel alone and recompute their underflows (at most 4 % of the pairs, at 512) in
#: float32 with exponents first -- 6-10 % faster at 320..512 than exponents over 256 (H100,
#: results/h100/exp-above.json).
_CASCADE = {"exp_scale": True, "exp_above": 512, "exp_recompute": True}
#: bin limits the exponents may start above (the cuda-subwarp-exp-above family)
EXP_ABOVE_AXIS = (256, 320, 384, 448, 512, 640, 768)
#: register caps of one bin's kernel (the cuda-subwarp-regcap family; 0: the table's)
REGCAP_AXIS = (0, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 244, 248)


def backends() -> list[Backend]:
    return [
        SubwarpBackend("cuda-subwarp", small_tiers=SMALL_TIERS, **_CASCADE,
                       description="auto (p,k) per length bin, float32; per-thread power-of-two "
                                   "exponents for reads over 512, and for the shorter "
                                   "reads' pairs under their floor (1e-33 over 256 bases up "
                                   "to insertion quality 50, else 1e-28) a float32 recompute "
                                   "with them (no float64 recompute of underflowing pairs)"),
        SubwarpBackend("cuda-subwarp-batched", small_tiers=SMALL_TIERS, **_CASCADE,
                       batch_calls=True,
                       description="as cuda-subwarp; calls in flight (--in-flight N) run as one "
                                   "call: one staging, upload, launch set and copy back for up "
                                   "to N regions"),
        SubwarpBackend("cuda-subwarp-exp-all", small_tiers=SMALL_TIERS, exp_scale=True,
                       description="per-thread exponents in every bin (the exponent checks "
                                   "cost every pair; cuda-subwarp before the queue cascade)"),
        SubwarpBackend("cuda-subwarp-exp-long", small_tiers=SMALL_TIERS, exp_scale=True,
                       exp_above=256,
                       description="exponents only for reads over 256 (where pairs underflow in "
                                   "practice); shorter reads keep the float64 recompute"),
        SubwarpBackend("cuda-subwarp-f64rescue", small_tiers=SMALL_TIERS,
                       description="auto bins, float32 pairs under 1e-28 recomputed in float64 "
                                   "(the path the exponents replaced)"),
        SubwarpBackend("cuda-subwarp-noemistable", bins=NOTABLE_BINS, emis_table=False,
                       description="compare-and-select emissions instead of the shared table"),
        SubwarpBackend("cuda-subwarp-6op", small_tiers=SMALL_TIERS, **_CASCADE,
                       recurrence="6op",
                       description="as cuda-subwarp with the 6-instruction recurrence (gm_i on "
                                   "the I and D terms) instead of the 5-instruction one"),
        SubwarpBackend("cuda-subwarp-gatkform", bins=GATKFORM_BINS, recurrence="gatk",
                       description="GATK's 8-instruction recurrence instead of the scaled one"),
        SubwarpBackend("cuda-subwarp-nobins", bins=(), long_config=(32, 16),
                       description="one p32k16 kernel for all reads (multi-tile beyond 512)"),
        SubwarpBackend("cuda-subwarp-nostreams", streams=False,
                       description="bins serialized on one stream"),
        *families()[0].preset_backends(),
    ]


def families() -> list:
    """The sub-warp p x k axes: ``hmmbench run -b cuda-subwarp-fixed --axis p=4,8 --axis k=16``;
    cuda-subwarp's recurrence and register cap: ``-b cuda-subwarp-auto --axis min_blocks=2,3``;
    the longest reads without exponents: ``-b cuda-subwarp-exp-above --axis exp_above=384``;
    one bin of the table in another shape: ``-b 'cuda-subwarp-shape[hi=256,p=16,k=16,min_blocks=4]'``;
    one bin's kernel under a register cap (and, with exponents, another check interval, shift or
    code window): ``-b 'cuda-subwarp-regcap[hi=896,max_regs=224]'``, ``--axis exp_every=16,24``,
    ``--axis exp_shift=on,off``."""
    return [BackendFamily("cuda-subwarp-fixed", {"p": SUPPORTED_P, "k": SUPPORTED_K},
                          {"p": 8, "k": 16}, fixed_pk,
                          alias=lambda q: f"cuda-subwarp-p{q['p']}k{q['k']}",
                          presets=({"p": 8, "k": 16},)),
            BackendFamily("cuda-subwarp-auto",
                          {"recurrence": tuple(RECURRENCES), "min_blocks": (0, 1, 2, 3, 4, 6, 8)},
                          {"recurrence": "5op", "min_blocks": 0}, auto_bins),
            BackendFamily("cuda-subwarp-exp-above", {"exp_above": EXP_ABOVE_AXIS},
                          {"exp_above": _CASCADE["exp_above"]},
                          lambda name, exp_above: auto_bins(name, "5op", 0, exp_above)),
            BackendFamily("cuda-subwarp-shape",
                          {"hi": tuple(row[0] for row in DEFAULT_BINS), "p": SUPPORTED_P,
                           "k": SUPPORTED_K, "min_blocks": (0, 2, 3, 4, 6)},
                          {"hi": 256, "p": 8, "k": 32, "min_blocks": 0}, bin_shape),
            BackendFamily("cuda-subwarp-regcap",
                          {"hi": tuple(row[0] for row in DEFAULT_BINS), "max_regs": REGCAP_AXIS,
                           "exp_every": (0, 16, 20, 24, 28), "exp_shift": ("own", "on", "off"),
                           "code_window": ("own", "on", "off")},
                          {"hi": 896, "max_regs": 0, "exp_every": 0, "exp_shift": "own",
                           "code_window": "own"},
                          bin_regcap,
                          alias=regcap_name)]


def regcap_name(q: dict) -> str:
    """A cuda-subwarp-regcap variant's name: its exponent axes only where not the bin's own."""
    own = {"exp_every": 0, "exp_shift": "own", "code_window": "own"}
    return "cuda-subwarp-regcap[" + ",".join(f"{k}={v}" for k, v in q.items()
                                             if own.get(k, None) != v) + "]"


def fixed_pk(name: str, p: int, k: int) -> SubwarpBackend:
    """One (p, k) kernel for every read (multi-tile beyond p*k): the sub-warp axes."""
    return SubwarpBackend(name, bins=((p * k, p, k),), long_config=(p, k),
                          description=f"one fixed p{p}k{k} kernel (multi-tile beyond {p * k})")


def auto_bins(name: str, recurrence: str, min_blocks: int,
              exp_above: int = _CASCADE["exp_above"]) -> SubwarpBackend:
    """cuda-subwarp with another recurrence, and every bin's kernel capped to ``min_blocks``
    resident blocks of 128 threads (0: the table's caps): 2 blocks leave 255 registers a thread,
    3 leave 168, 4 leave 128, 6 leave 80, 8 leave 64 (warps per scheduler: as many as blocks;
    the register file is split per scheduler, so no cap lies between 2 and 3 warps each);
    exponents in the bins of reads over ``exp_above`` (shorter ones: float32 alone, their
    underflows through the queue cascade)."""
    bins = DEFAULT_BINS if not min_blocks else \
        tuple((hi, p, k, min_blocks) for hi, p, k, *_ in DEFAULT_BINS)
    return SubwarpBackend(name, bins=bins, small_tiers=SMALL_TIERS, recurrence=recurrence,
                          **{**_CASCADE, "exp_above": exp_above},
                          description=f"cuda-subwarp, {recurrence} recurrence, min blocks "
                          f"{min_blocks or 'of the table'}, exponents above {exp_above}")


def bin_shape(name: str, hi: int, p: int, k: int, min_blocks: int) -> SubwarpBackend:
    """cuda-subwarp with its bin of reads up to ``hi`` run by a p x k kernel capped to
    ``min_blocks`` resident blocks (0: none), every other bin as the table has it."""
    if p * k < hi:
        raise UserError(f"cuda-subwarp-shape: p{p}k{k} (tile {p * k}) cannot hold reads of {hi}")
    bins = tuple((hi, p, k, min_blocks) if row[0] == hi else row for row in DEFAULT_BINS)
    return SubwarpBackend(name, bins=bins, small_tiers=SMALL_TIERS, **_CASCADE,
                          description=f"cuda-subwarp, reads up to {hi} by p{p}k{k}, min blocks "
                          f"{min_blocks or 'none'}")


def bin_regcap(name: str, hi: int, max_regs: int, exp_every: int = 0,
               exp_shift: str = "own", code_window: str = "own") -> SubwarpBackend:
    """cuda-subwarp with its bin of reads up to ``hi`` compiled under a cap of ``max_regs``
    registers (``__maxnreg__``, 0: the table's launch bounds), every other bin as the table has
    it: below the 255 that 2 resident blocks allow, ptxas keeps more of a row's values in place
    across the unrolled steps (fewer MOVs at the loop's end), at the price of spills in the
    setup. Where it has exponents, ``exp_every`` (0: the bin's own, EXP_BIN_SETTINGS, or 16): the
    steps between its checks; ``exp_shift`` on / off: its threads' last rows held up (one
    conversion factor) or not (two), ``code_window`` on / off: lane 0's codes from the window
    or loads; "own": as EXP_BIN_SETTINGS has it."""
    bins = tuple((*r[:3], r[3] if len(r) > 3 else 0, max_regs) if r[0] == hi and max_regs else r
                 for r in DEFAULT_BINS)
    cap = f"{max_regs} registers" if max_regs else "the table's register cap"
    b = SubwarpBackend(name, bins=bins, small_tiers=SMALL_TIERS, **_CASCADE,
                       description=f"cuda-subwarp, reads up to {hi} under {cap}"
                       + (f", exponent checks every {exp_every} steps" if exp_every else ""))
    own = b.exp_bins.setdefault(hi, {})
    if exp_every:
        own["exp_every"] = exp_every
    for axis, value in (("exp_shift", exp_shift), ("code_window", code_window)):
        if value != "own":
            own[axis] = int(value == "on")
    return b
