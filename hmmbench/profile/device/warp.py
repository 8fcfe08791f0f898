"""The warp-group filter kernels' variants and defines (kernels_common/profile/warp.h), shared by
``profile-cuda-warp`` / ``profile-cuda-cudampf`` (:mod:`hmmbench.profile.device.cuda`) and
``profile-opencl-warp`` (:mod:`hmmbench.profile.device.opencl`): the same kernels, the same defines,
the same profile layouts (:mod:`hmmbench.profile.device.layout`), but for the OpenCL twin's
striped rows where CUDA keeps its diagonals fixed (``FIXED_DIAG``)."""
from __future__ import annotations

import numpy as np

from . import layout

#: defines of the warp kernels; "group" None = by model size (``auto_group``), "row_inplace"
#: None = by kind and group size (``auto_inplace``), "fixed_diag" None = by model size
#: (``auto_fixed_diag``). VF_NTSC_ALU (every VF transition floor by ALU)
#: stays off in the tuned set: with it a VF refactor compiled to wrong scores on the H100
#: (docs/profile-design.md), so the exactness of that define rests on one code shape; the tuned
#: set computes the floors of BM, MM and IM by ALU (VF_NTSC_MASK 0x07) and loads the others,
#: which balances the VF's L1 loads against its ALU work (docs/profile-kernels.md)
CUDAMPF_VARIANT = {"group": 32, "simd16": 0, "prefetch": 0, "smem": 0, "lazy": 0, "vf_dpx": 0,
                   "vf_ntsc_alu": 0, "row_inplace": 0, "vf_ntsc_mask": 0, "fixed_diag": 0}
TUNED_VARIANT = {"group": None, "simd16": 1, "prefetch": 1, "smem": 0, "lazy": 1, "vf_dpx": 1,
                 "vf_ntsc_alu": 0, "row_inplace": None, "vf_ntsc_mask": 0x07, "fixed_diag": None}


def auto_inplace(group: int, kind: str) -> bool:
    """ROW_INPLACE where it won on the H200 (docs/profile-kernels.md): the full MSV and the
    Viterbi filter at every size, SSV on whole-warp groups only (``auto_group``: M > 512; it
    lost 1-2 % with 8 and 16 lanes). A function of the kernel's shape, not of M, so models of
    one shape still share one build."""
    return kind != "ssv" or group == 32


def auto_fixed_diag(M: int) -> int:
    """FIXED_DIAG of the SSV/MSV kernels where it won on the H200 (docs/profile-kernels.md):
    the wide form (2: diagonals that stay in their registers, two profile words per load) past
    128 positions (groups of 16 or 32 lanes), the striped rows up to 128, where a lane's few
    vectors leave the per-row offset and wrap check a large share of the row."""
    return 2 if M > 128 else 0


def fixed_diag(variant: dict, M: int) -> int:
    """The FIXED_DIAG of ``variant``'s SSV/MSV kernels for a model (a batch: its largest) of M
    positions."""
    v = variant.get("fixed_diag", 0)
    return auto_fixed_diag(M) if v is None else v


def auto_group(M: int, kind: str = "ssv") -> int:
    """Lanes per sequence of the SSV/MSV group kernels: narrow groups for small models, so the
    striped vectors are mostly real cells; the full MSV (a vote per row) prefers 16 lanes up to
    large models (H100 measurements, docs/profile-design.md)."""
    if kind == "msv":
        return 8 if M <= 128 else 16 if M <= 3000 else 32
    return 32 if M > 512 else 16 if M > 128 else 8


#: a full-MSV launch over at most this many sequences (HMMER's recomputes: hundreds to a few
#: thousand of a database) gives each a whole warp: such a launch is far from filling the GPU
#: and lasts as long as its longest sequence's chain of rows, which 32 lanes walk with half
#: the vectors per lane of 16
SHORT_LIST = 8192


def short_list_variant(variant: dict) -> dict:
    """The variant of a full-MSV launch over a short list (:data:`SHORT_LIST`): 32 lanes per
    sequence where the group is chosen by size."""
    return variant if variant["group"] else {**variant, "group": 32}


def group(variant: dict, M: int, kind: str) -> int:
    """Lanes per sequence of ``kind``'s kernel (the Viterbi filter: always a whole warp)."""
    if kind == "vf":
        return 32
    return variant["group"] or auto_group(M, kind)


def profile(model, kind: str, variant: dict) -> tuple:
    """(Q, host uint32 words) of the warp kernels' profile for ``kind``."""
    if kind == "vf":
        return layout.warp_word_profile(model, bool(variant["vf_dpx"]))
    g, fixed = group(variant, model.M, kind), fixed_diag(variant, model.M)
    if fixed:
        return layout.warp_fixed_profile(model, kind, g, wide=fixed == 2)
    return layout.warp_byte_profile(model, kind, g, bool(variant["simd16"]))


def defines(model, kind: str, Q: int, variant: dict, block: int) -> dict:
    """-D defines of ``kind``'s warp kernel for ``model`` (Q: its profile's vectors)."""
    M = model.M
    d = {"MODEL_M": M, "BLOCK": block, "KP": model.Kp, "QB": layout.n_vectors(M, 128),
         "QW": layout.n_vectors(M, 64), "GROUP": group(variant, M, kind),
         "SIMD16": variant["simd16"], "PREFETCH": variant["prefetch"], "LAZY_XE": variant["lazy"],
         "VF_DPX": variant["vf_dpx"], "VF_NTSC_ALU": variant.get("vf_ntsc_alu", 0),
         "ROW_INPLACE": int(auto_inplace(group(variant, M, kind), kind)
                            if variant.get("row_inplace", 0) is None
                            else variant.get("row_inplace", 0)),
         "VF_NTSC_MASK": variant.get("vf_ntsc_mask", 0),
         "FIXED_DIAG": 0 if kind == "vf" else fixed_diag(variant, M)}
    d["QW" if kind == "vf" else "QB"] = Q
    return shape_defines(d, kind)


def shape_defines(d: dict, kind: str) -> dict:
    """The defines with what ``kind``'s warp kernel does not read made the same for every model:
    the kernel reads its own vector count (QB for ssv/msv, QW for vf), never MODEL_M nor the
    other kind's count, so models of one shape share one build (a many-model file compiles per
    shape: models-mixed100's 288 kernels are 102 builds). MODEL_M stays defined for CUDA's
    thread-per-sequence kernels compiled beside in filters.cu, unused by the warp backends."""
    d["QB" if kind == "vf" else "QW"] = 2
    d["MODEL_M"] = 64 * d["QW"] if kind == "vf" else 128 * d["QB"]
    return d




def batch_profile(models: list, kind: str, variant: dict) -> tuple:
    """(Q, host uint32 words) of ``kind``'s kernel for the models of one batch: one group
    size for all of them, the largest model's (its Q too)."""
    M = max(m.M for m in models)
    return layout.warp_batch_profile(models, kind, group(variant, M, kind),
                                     bool(variant["simd16"]), fixed_diag(variant, M))


def batch_defines(models: list, kind: str, Q: int, variant: dict, block: int) -> dict:
    """-D defines of ``kind``'s kernel for a batch of models (MODELS = how many)."""
    big = max(models, key=lambda m: m.M)
    return {**defines(big, kind, Q, variant, block), "MODELS": len(models)}


def batch_scalars(models: list) -> np.ndarray:
    """The kernels' per-model table mpar[MODELS][4]: bias, base, tec, 0."""
    return np.array([[m.byte.bias, m.byte.base, m.byte.tec, 0] for m in models], np.int32)
