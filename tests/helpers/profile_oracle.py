"""Test oracle: HMMER 3.4's own routines from the library pyhmmer ships (ctypes).

pyhmmer's public API offers the SSV/MSV filters; generic Viterbi/Forward and the Viterbi filter
are only in its bundled ``liblibhmmer.so``. This module is test-only oracle code: it opens the
model file with HMMER, configures the profile (local multihit) per target length, and calls
p7_ViterbiFilter / p7_GViterbi / p7_GForward / p7_ForwardParser / p7_GMSV and the bias
filter's p7_bg_FilterScore on sentinel-framed digital sequences.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

P7_LOCAL = 1
#: p7_GMSV's nu (expected hits in the J state): 2.0, its documented default and the value the
#: SIMD MSV filter has built in (E->C = E->J = log 0.5); the pipeline never calls p7_GMSV itself
GMSV_NU = 2.0


def _lib():
    import pyhmmer
    base = os.path.dirname(os.path.dirname(pyhmmer.__file__))
    paths = glob.glob(os.path.join(base, "pyhmmer.libs", "liblibhmmer*.so*"))
    if not paths:
        return None
    lib = ctypes.CDLL(paths[0])
    vp, ip, fp = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)
    sig = {
        "p7_hmmfile_Open": (ip, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp), ctypes.c_char_p]),
        "p7_hmmfile_Read": (ip, [vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "p7_hmmfile_Close": (None, [vp]),
        "p7_bg_Create": (vp, [vp]),
        "p7_profile_Create": (vp, [ip, vp]),
        "p7_ProfileConfig": (ip, [vp, vp, vp, ip, ip]),
        "p7_ReconfigLength": (ip, [vp, ip]),
        "p7_oprofile_Create": (vp, [ip, vp]),
        "p7_oprofile_Convert": (ip, [vp, vp]),
        "p7_oprofile_ReconfigLength": (ip, [vp, ip]),
        "p7_omx_Create": (vp, [ip, ip, ip]),
        "p7_omx_Destroy": (None, [vp]),
        "p7_gmx_Create": (vp, [ip, ip]),
        "p7_gmx_Destroy": (None, [vp]),
        "p7_ViterbiFilter": (ip, [ctypes.c_char_p, ip, vp, vp, fp]),
        "p7_GViterbi": (ip, [ctypes.c_char_p, ip, vp, vp, fp]),
        "p7_GForward": (ip, [ctypes.c_char_p, ip, vp, vp, fp]),
        # HMMER 3.4 generic_msv.c: (dsq, L, gm, gx, float nu, float *opt_sc)
        "p7_GMSV": (ip, [ctypes.c_char_p, ip, vp, vp, ctypes.c_float, fp]),
        "p7_FLogsumInit": (ip, []),
        "p7_bg_SetLength": (ip, [vp, ip]),
        "p7_bg_NullOne": (ip, [vp, ctypes.c_char_p, ip, fp]),
        "p7_ForwardParser": (ip, [ctypes.c_char_p, ip, vp, vp, fp]),
        "p7_bg_SetFilter": (ip, [vp, ip, fp]),
        "p7_bg_FilterScore": (ip, [vp, ctypes.c_char_p, ip, fp]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    lib.p7_FLogsumInit()
    return lib


class HmmerOracle:
    """HMMER's profiles for every model of one .hmm file (models in file order)."""

    def __init__(self, path: str, Ms: list):
        self.lib = lib = _lib()
        if lib is None:
            raise RuntimeError("liblibhmmer not found next to pyhmmer")
        hfp, abc = ctypes.c_void_p(), ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if lib.p7_hmmfile_Open(path.encode(), None, ctypes.byref(hfp), err) != 0:
            raise RuntimeError(err.value)
        self.models = []
        self.backgrounds = []
        for M in Ms:
            hmm = ctypes.c_void_p()
            if lib.p7_hmmfile_Read(hfp, ctypes.byref(abc), ctypes.byref(hmm)) != 0:
                raise RuntimeError("p7_hmmfile_Read failed")
            bg = lib.p7_bg_Create(abc)
            gm = lib.p7_profile_Create(M, abc)
            lib.p7_ProfileConfig(hmm, bg, gm, 400, P7_LOCAL)
            om = lib.p7_oprofile_Create(M, abc)
            lib.p7_oprofile_Convert(gm, om)
            self.models.append((M, gm, om))
            self.backgrounds.append(bg)
        lib.p7_hmmfile_Close(hfp)

    def filter_scores(self, which: int, composition, codes_list) -> np.ndarray:
        """p7_bg_FilterScore (nats, float32) of each digital sequence: the bias filter's null
        model set up as p7_pli_NewModel does (p7_bg_SetFilter with the model's M and
        ``composition``) and configured to each target's length (p7_bg_SetLength)."""
        lib = self.lib
        M = self.models[which][0]
        bg = self.backgrounds[which]
        compo = np.ascontiguousarray(composition, dtype=np.float32)
        lib.p7_bg_SetFilter(bg, M, compo.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        out = np.empty(len(codes_list), dtype=np.float32)
        sc = ctypes.c_float()
        for n, codes in enumerate(codes_list):
            L = len(codes)
            dsq = bytes([255]) + np.asarray(codes, dtype=np.uint8).tobytes() + bytes([255])
            lib.p7_bg_SetLength(bg, L)
            lib.p7_bg_FilterScore(bg, dsq, L, ctypes.byref(sc))
            out[n] = sc.value
        return out

    def scores(self, which: int, codes_list, kinds=("vf", "gv", "gf", "fp"),
               nu: float = GMSV_NU) -> dict:
        """HMMER's scores (nats, float32) of each digital sequence per kind: "vf", "gv", "gf",
        "fp", "gmsv" (p7_GMSV with ``nu``) and "null" (p7_bg_NullOne at the target's L)."""
        lib = self.lib
        M, gm, om = self.models[which]
        bg = self.backgrounds[which]
        out = {k: np.empty(len(codes_list), dtype=np.float32) for k in kinds}
        ox = lib.p7_omx_Create(M, 0, 0)
        sc = ctypes.c_float()
        try:
            for n, codes in enumerate(codes_list):
                L = len(codes)
                dsq = bytes([255]) + np.asarray(codes, dtype=np.uint8).tobytes() + bytes([255])
                lib.p7_ReconfigLength(gm, L)
                lib.p7_oprofile_ReconfigLength(om, L)
                if "null" in kinds:
                    lib.p7_bg_SetLength(bg, L)
                    lib.p7_bg_NullOne(bg, dsq, L, ctypes.byref(sc))
                    out["null"][n] = sc.value
                if "vf" in kinds:
                    lib.p7_ViterbiFilter(dsq, L, om, ox, ctypes.byref(sc))
                    out["vf"][n] = sc.value
                if "fp" in kinds:                     # SIMD Forward of the pipeline
                    fx = lib.p7_omx_Create(M, 0, L)
                    lib.p7_ForwardParser(dsq, L, om, fx, ctypes.byref(sc))
                    out["fp"][n] = sc.value
                    lib.p7_omx_Destroy(fx)
                if "gv" in kinds or "gf" in kinds or "gmsv" in kinds:
                    gx = lib.p7_gmx_Create(M, L)
                    if "gmsv" in kinds:
                        lib.p7_GMSV(dsq, L, gm, gx, nu, ctypes.byref(sc))
                        out["gmsv"][n] = sc.value
                    if "gv" in kinds:
                        lib.p7_GViterbi(dsq, L, gm, gx, ctypes.byref(sc))
                        out["gv"][n] = sc.value
                    if "gf" in kinds:
                        lib.p7_GForward(dsq, L, gm, gx, ctypes.byref(sc))
                        out["gf"][n] = sc.value
                    lib.p7_gmx_Destroy(gx)
        finally:
            lib.p7_omx_Destroy(ox)
        return out
