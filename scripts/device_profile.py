"""Development driver for the CUDA profile-HMM filter kernels (issue 6): kernel-only TCUPS of
every warp-kernel variant over model sizes on a Swiss-Prot-sized generated database, with
exactness against profile-numpy on a sample of sequences.

    python3 scripts/device_profile.py --residues 2e8 --sizes 100,400,2400 --out $OUT/profile.json

Kernel time comes from CUDA events around the launch (the backends' clocks); cells = M x
residues of the sequences launched. Figures printed here are development numbers (kernel
variants the registry does not hold); the tool produces the committed ones (`hmmbench suite run
profile`, or its parts profile-curve, profile-proteome, profile-peers, profile-task).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from hmmbench.profile import datasets
from hmmbench.profile.cuda import CUDAMPF_VARIANT, TUNED_VARIANT, _CudaDevice
from hmmbench.profile.host import filter_scores, launch_order
from hmmbench.profile.model import ProfileModel, SequenceSet


def sampled_model(M: int, seed: int) -> ProfileModel:
    import pyhmmer
    abc = pyhmmer.easel.Alphabet.amino()
    hmm = pyhmmer.plan7.HMM.sample(abc, M, pyhmmer.easel.Randomness(seed))
    hmm.name = f"sampled-{M}".encode()
    return ProfileModel.from_hmm(hmm)


def odd_sequences(seed: int = 5) -> SequenceSet:
    """Edge cases: length 1, degenerate residues (B J Z O U X = codes 21..26), '*' (27)."""
    rng = np.random.default_rng(seed)
    parts = [np.array([3], np.uint8), np.array([27], np.uint8), np.array([26], np.uint8),
             rng.integers(21, 28, 50).astype(np.uint8),
             np.where(rng.random(400) < 0.2, rng.integers(21, 28, 400), rng.integers(0, 20, 400)).astype(np.uint8),
             rng.integers(0, 20, 3000).astype(np.uint8)]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"odd{i}" for i in range(len(parts))], np.concatenate(parts), offs)


def concat(a: SequenceSet, b: SequenceSet) -> SequenceSet:
    offs = np.concatenate([a.offsets, a.offsets[-1] + b.offsets[1:]])
    return SequenceSet(list(a.names) + list(b.names), np.concatenate([a.residues, b.residues]), offs)


def reference(model, seqs, kinds):
    from cpu_reference.profile import filters as pf
    ref = {}
    if "ssv" in kinds or "msv" in kinds:
        ref["ssv"] = pf.ssv_filter(model, seqs)
    if "msv" in kinds:
        ref["msv"] = pf.msv_filter(model, seqs, ref["ssv"])
    if "vf" in kinds:
        ref["vf"] = pf.viterbi_filter(model, seqs)
    if "msv-full" in kinds:
        ref["msv-full"] = pf.msv_full(model, seqs, np.arange(len(seqs)))
    return ref


def same(got, want) -> int:
    """Mismatches, nan == nan and inf == inf."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return int((~((got == want) | (np.isnan(got) & np.isnan(want)))).sum())


class Clock:
    def __init__(self):
        self.timing = {}

    def __call__(self, stage):
        clock = self

        class _S:
            def __enter__(self):
                self.t = time.perf_counter()

            def __exit__(self, *a):
                clock.timing[stage] = clock.timing.get(stage, 0) + time.perf_counter() - self.t
        return _S()


def timed(variant, warp, fn):
    """(result, kernel seconds, launches) of fn(device) with a fresh event timer."""
    from hmmbench.apis import cuda as cuda_api
    timer = cuda_api.EventTimer()
    dev = _CudaDevice(warp, variant)
    dev.begin(timer)
    out = fn(dev)
    sec = timer.seconds().get("kernel", float("nan"))
    return out, sec, dev.launches


def run_kind(dev, model, seqs, kind, order):
    L = seqs.lengths
    if kind == "ssv":
        return dev.ssv_xe(model, seqs, order)
    if kind == "msv-full":                 # the full MSV kernel on every sequence
        bp = model.byte
        return dev.msv_xj(model, seqs, order, ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8))
    if kind == "vf":
        return dev.vf_xc(model, seqs, order, model.word.move(L).astype(np.int16))
    if kind == "msv":                      # HMMER's p7_MSVFilter: SSV, full MSV where SSV can't decide
        return filter_scores(dev, model, seqs, "msv", Clock())
    raise ValueError(kind)


def finish(model, seqs, kind, raw):
    from cpu_reference.profile import filters as pf
    L = seqs.lengths
    if kind == "msv":
        return raw                          # filter_scores' scores already
    raw = np.asarray(raw, np.int64)
    if kind == "ssv":
        return pf.ssv_from_xe(model, raw, L)[0]
    if kind == "vf":
        return pf.vf_from_xc(model, np.minimum(raw, 32767), raw > 32767, L)
    if kind == "msv-full":
        return pf.msv_from_xj(model, np.maximum(raw, 0), raw < 0, L)


GENERIC_TOLERANCE = {"viterbi": 1e-3, "forward": 1e-2}


def generic_row(model, M, kind, db, gpu, n_check: int, residues: float):
    """profile-cuda-ganesan on a database prefix: kernel seconds from its Execution, max error vs
    the NumPy reference on the first n_check sequences of a length-spread sample."""
    from cpu_reference.profile import generic as pg
    from hmmbench.profile.cuda import CudaGenericProfile
    from hmmbench.profile.job import ProfileSearch
    backend = CudaGenericProfile()
    n = int(np.searchsorted(db.offsets, int(residues)))
    prefix = db.subset(range(min(n, len(db))))
    check = concat(db.subset(range(0, len(db), max(1, len(db) // n_check))[:n_check]), odd_sequences())
    got = backend.run(ProfileSearch(model, check, kind)).log10
    want = (pg.generic_viterbi if kind == "viterbi" else pg.generic_forward)(model, check)
    same_inf = (got == want) | (np.isnan(got) & np.isnan(want))   # -inf (no path) on both sides
    with np.errstate(invalid="ignore"):
        err = float(np.max(np.where(same_inf, 0.0, np.abs(got - want)), initial=0.0))
    ex = backend.run(ProfileSearch(model, prefix, kind))
    sec = ex.timing["kernel"]
    cells = M * prefix.n_residues
    return {"gpu": gpu, "M": M, "kind": kind, "variant": "ganesan", "group": "", "cells": cells,
            "kernel_s": sec, "tcups": cells / sec / 1e12, "registers": None, "launches": [],
            "sample_mismatches": int(err > GENERIC_TOLERANCE[kind]), "max_abs_error": err,
            "sample_sequences": len(check), "full_vs_first": ""}


VARIANTS = {
    "tuned": TUNED_VARIANT,
    "cudampf": CUDAMPF_VARIANT,
    "tuned-bytes": dict(TUNED_VARIANT, simd16=0),
    "tuned-noprefetch": dict(TUNED_VARIANT, prefetch=0),
    "tuned-nolazy": dict(TUNED_VARIANT, lazy=0),
    "tuned-novfdpx": dict(TUNED_VARIANT, vf_dpx=0),
    "tuned-vfntscalu": dict(TUNED_VARIANT, vf_ntsc_alu=1),
    "tuned-smem": dict(TUNED_VARIANT, smem=1),
    "tuned-g8": dict(TUNED_VARIANT, group=8),
    "tuned-g16": dict(TUNED_VARIANT, group=16),
    "tuned-g32": dict(TUNED_VARIANT, group=32),
    "task": None,
}
#: kinds a variant changes (an ablation is only timed where it differs from "tuned")
AFFECTS = {"tuned-bytes": ("ssv", "msv-full"), "tuned-nolazy": ("msv-full",),
           "tuned-novfdpx": ("vf",), "tuned-vfntscalu": ("vf",), "tuned-g8": ("ssv", "msv-full"),
           "tuned-g16": ("ssv", "msv-full"), "tuned-g32": ("ssv", "msv-full")}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--residues", type=float, default=2e8)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--sizes", default="100,200,400,800,1600,2400")
    ap.add_argument("--kinds", default="ssv,msv,msv-full,vf")
    ap.add_argument("--variants", default="tuned,cudampf")
    ap.add_argument("--extra", default="", help="variants timed at every size (their kinds)")
    ap.add_argument("--extra-max-m", type=int, default=1 << 30)
    ap.add_argument("--ablate-sizes", default="", help="sizes where every variant is timed")
    ap.add_argument("--slow-residues", type=float, default=2e7,
                    help="database prefix for the slow variants (cudampf, task)")
    ap.add_argument("--generic", default="", help="generic kinds (viterbi,forward) timed with "
                    "profile-cuda-ganesan on --generic-residues")
    ap.add_argument("--generic-residues", type=float, default=2e6)
    ap.add_argument("--generic-check", type=int, default=12)
    ap.add_argument("--sample", type=int, default=1500, help="sequences checked vs profile-numpy")
    ap.add_argument("--budget", type=float, default=330, help="seconds; stop starting sizes after")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    from hmmbench.apis import cuda as cuda_api
    gpu = cuda_api.gpu_name()
    t0 = time.perf_counter()
    db = datasets.generate_proteins(int(a.residues), a.seed)
    print(f"# GPU {gpu}; database {len(db)} proteins, {db.n_residues:.3e} residues "
          f"(generated in {time.perf_counter() - t0:.1f} s)", flush=True)
    order = launch_order(db)
    slow_n = int(np.searchsorted(db.offsets, int(a.slow_residues)))
    slow_db = db.subset(range(min(slow_n, len(db))))
    slow_order = launch_order(slow_db)
    step = max(1, len(db) // a.sample)
    sample = concat(db.subset(range(0, len(db), step)), odd_sequences())
    sizes = [int(x) for x in a.sizes.split(",")]
    ablate = {int(x) for x in a.ablate_sizes.split(",") if x}
    kinds = a.kinds.split(",")
    rows, problems, redo = [], [], {}
    print(f"{'M':>5} {'kind':9} {'variant':17} {'G':>3} {'cells':>9} {'kernel_s':>9} {'TCUPS':>7} "
          f"{'regs':>4} {'sample_mismatch':>15} {'full_vs_tuned':>13}", flush=True)
    for M in sizes:
        if time.perf_counter() - t_start > a.budget:
            print(f"# budget reached: sizes from M={M} not run", flush=True)
            break
        model = sampled_model(M, seed=M)
        ref = reference(model, sample, kinds)
        extra = [v for v in a.extra.split(",") if v and M <= a.extra_max_m]
        names = list(dict.fromkeys(a.variants.split(",") + extra +
                                   (list(VARIANTS) if M in ablate else [])))
        full_raw = {}
        for name in names:
            variant = VARIANTS[name]
            warp = variant is not None
            for kind in kinds:
                if name in AFFECTS and kind not in AFFECTS[name]:
                    continue
                if name == "task" and kind == "msv":
                    continue
                slow = name in ("cudampf", "task")
                seqs, orde = (slow_db, slow_order) if slow else (db, order)
                # exactness on the sample (also the warm-up: compiles and loads the module)
                got, _, _ = timed(variant, warp, lambda d: run_kind(d, model, sample, kind, launch_order(sample)))
                bad = same(finish(model, sample, kind, got), ref[kind])
                raw, sec, launches = timed(variant, warp, lambda d: run_kind(d, model, seqs, kind, orde))
                cells = M * seqs.n_residues
                cmp = ""
                if not slow:
                    key = kind
                    if key in full_raw:
                        cmp = str(same(raw, full_raw[key]))
                    else:
                        full_raw[key] = np.asarray(raw)
                else:
                    if kind in full_raw:
                        sub = np.asarray(raw)[:len(seqs)]
                        cmp = "prefix " + str(same(sub, full_raw[kind][:len(seqs)]))
                last = launches[-1] if launches else {}
                g = last.get("GROUP", "") if kind != "vf" else 32
                row = {"gpu": gpu, "M": M, "kind": kind, "variant": name,
                       "defines": variant, "group": g, "cells": cells, "kernel_s": sec,
                       "tcups": cells / sec / 1e12, "registers": last.get("registers"),
                       "launches": launches, "sample_mismatches": bad,
                       "sample_sequences": len(sample), "full_vs_first": cmp}
                if kind == "ssv" and not slow:
                    from cpu_reference.profile import filters as pf
                    redo[M] = float(pf.ssv_from_xe(model, np.asarray(raw, np.int64), seqs.lengths)[1].mean())
                if kind == "msv":
                    row["redo_fraction"] = redo.get(M)
                rows.append(row)
                if bad > 0 or (cmp not in ("", "0", "prefix 0")):
                    problems.append(row)
                print(f"{M:5d} {kind:9} {name:17} {g!s:>3} {cells:9.2e} {sec:9.4f} "
                      f"{cells / sec / 1e12:7.3f} {last.get('registers', '')!s:>4} "
                      f"{bad:15d} {cmp:>13}", flush=True)
        for kind in [k for k in a.generic.split(",") if k]:
            row = generic_row(model, M, kind, db, gpu, a.generic_check, a.generic_residues)
            rows.append(row)
            if row["sample_mismatches"]:
                problems.append(row)
            print(f"{M:5d} {kind:9} {'ganesan':17} {'':>3} {row['cells']:9.2e} "
                  f"{row['kernel_s']:9.4f} {row['tcups']:7.3f} {'':>4} "
                  f"{'maxerr %.1e' % row['max_abs_error']:>15}", flush=True)
    print(f"# {len(problems)} rows with mismatches; total {time.perf_counter() - t_start:.0f} s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"gpu": gpu, "residues": db.n_residues, "proteins": len(db),
                       "slow_residues": slow_db.n_residues, "rows": rows}, f, indent=1,
                      default=lambda o: o.item() if hasattr(o, "item") else str(o))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
