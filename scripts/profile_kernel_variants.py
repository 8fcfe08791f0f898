"""Kernel-only TCUPS of warp-kernel variants of the HMMER3 filters (profile-cuda-warp's source,
kernels_common/profile/warp.h, with defines the registry does not hold) on a generated database,
each variant's scores checked against profile-numpy on a sample and its raw integers on the whole
database against the tuned variant's: the study behind TUNED_VARIANT (docs/profile-kernels.md).

    python3 scripts/profile_kernel_variants.py --db proteins-2e8 --sizes 100,400,1200 \\
        --json $OUT/variants.json

Kinds: ssv (SSV on every sequence), msv (the full MSV kernel on every sequence), vf (the Viterbi
filter on every sequence); models query-M<size>. Kernel time = CUDA events around the one
launch, after a warm-up launch; the median of --repeats launches, with min and max. These are
development figures; `hmmbench run` / the profile-e2e suite make the committed ones.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cpu_reference.profile import filters as pf
from hmmbench.apis import cuda as glue
from hmmbench.profile import datasets
from hmmbench.profile.device import warp
from hmmbench.profile.device.cuda import BLOCK, SOURCE, TUNED_VARIANT, _CudaDevice
from hmmbench.profile.device.host import launch_order
from hmmbench.profile.model import SequenceSet

#: name -> (variant overrides of TUNED_VARIANT, kinds it is timed on); "ascending" is the tuned
#: set before ROW_INPLACE and VF_NTSC_MASK, "tuned" the registry's current one
_ASC = {"row_inplace": 0, "vf_ntsc_mask": 0}
VARIANTS = {
    "ascending": (_ASC, ("ssv", "msv", "vf")),
    "inplace": ({**_ASC, "row_inplace": 1}, ("ssv", "msv", "vf")),
    "ntsc-alu": ({**_ASC, "vf_ntsc_alu": 1}, ("vf",)),
    "mask07": ({**_ASC, "vf_ntsc_mask": 0x07}, ("vf",)),
    "mask0f": ({**_ASC, "vf_ntsc_mask": 0x0f}, ("vf",)),
    "mask70": ({**_ASC, "vf_ntsc_mask": 0x70}, ("vf",)),
    "inplace-mask07": ({"row_inplace": 1, "vf_ntsc_mask": 0x07}, ("vf",)),
    "tuned": ({}, ("ssv", "msv", "vf")),
}


def odd_sequences(seed: int = 5) -> SequenceSet:
    """Length 1, degenerate residues (B J Z O U X = codes 21..26), '*' (27), a long one."""
    rng = np.random.default_rng(seed)
    parts = [np.array([3], np.uint8), np.array([27], np.uint8), np.array([26], np.uint8),
             rng.integers(21, 28, 50).astype(np.uint8),
             np.where(rng.random(400) < 0.2, rng.integers(21, 28, 400),
                      rng.integers(0, 20, 400)).astype(np.uint8),
             rng.integers(0, 20, 3000).astype(np.uint8)]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"odd{i}" for i in range(len(parts))], np.concatenate(parts), offs)


def concat(a: SequenceSet, b: SequenceSet) -> SequenceSet:
    offs = np.concatenate([a.offsets, a.offsets[-1] + b.offsets[1:]])
    return SequenceSet(list(a.names) + list(b.names), np.concatenate([a.residues, b.residues]),
                       offs)


def raw(dev, model, seqs, kind, order):
    L = seqs.lengths
    if kind == "ssv":
        return dev.ssv_xe(model, seqs, order)
    if kind == "msv":
        bp = model.byte
        return dev.msv_xj(model, seqs, order, ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8))
    return dev.vf_xc(model, seqs, order, model.word.move(L).astype(np.int16))


def finished(model, seqs, kind, r):
    r, L = np.asarray(r, np.int64), seqs.lengths
    if kind == "ssv":
        return pf.ssv_from_xe(model, r, L)[0]
    if kind == "msv":
        return pf.msv_from_xj(model, np.maximum(r, 0), r < 0, L)
    return pf.vf_from_xc(model, np.minimum(r, 32767), r > 32767, L)


def reference(model, seqs, kind):
    if kind == "ssv":
        return pf.ssv_filter(model, seqs)
    if kind == "msv":
        return pf.msv_full(model, seqs, np.arange(len(seqs)))
    return pf.viterbi_filter(model, seqs)


def mismatches(got, want) -> int:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return int((~((got == want) | (np.isnan(got) & np.isnan(want)))).sum())


def precompile(models: dict, threads: int = 16) -> int:
    """nvcc every (variant, kind, M) kernel in parallel into PyCUDA's disk cache."""
    from pycuda.compiler import compile as nvcc_compile
    arch = glue.device_attributes()["arch"]
    specs = []
    for name, (over, kinds) in VARIANTS.items():
        variant = {**TUNED_VARIANT, **over}
        for model in models.values():
            for kind in kinds:
                Q, _ = warp.profile(model, kind, variant)
                d = {**warp.defines(model, kind, Q, variant, BLOCK), "PROFILE_SMEM": 0}
                specs.append(d)

    def build(d):
        nvcc_compile(glue.kernel_source(SOURCE), options=list(glue.BASE_OPTIONS) +
                     glue.define_flags(d), no_extern_c=True, arch=arch,
                     include_dirs=glue.include_dirs(SOURCE))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(build, specs))
    return len(specs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="proteins-2e8")
    ap.add_argument("--sizes", default="100,400,1200")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="the first is the one the others' raw integers are compared with")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sample", type=int, default=1500, help="sequences checked against numpy")
    ap.add_argument("--json", required=True)
    args = ap.parse_args(argv)
    t0 = time.time()
    seqs = datasets.resolve_database(args.db).loader()
    order = launch_order(seqs)
    sizes = [int(x) for x in args.sizes.split(",")]
    models = {M: datasets.resolve_model(f"query-M{M}").load()[0] for M in sizes}
    step = max(1, len(seqs) // args.sample)
    check = concat(seqs.subset(range(0, len(seqs), step)), odd_sequences())
    check_order = launch_order(check)
    print(f"db {args.db}: {len(seqs)} sequences, {seqs.n_residues} residues; check sample "
          f"{len(check)}; set-up {time.time() - t0:.0f} s", flush=True)
    t1 = time.time()
    print(f"precompiled {precompile(models)} kernels in {time.time() - t1:.0f} s", flush=True)
    names = args.variants.split(",")
    rows, base = [], {}
    for M in sizes:
        model = models[M]
        refs = {}
        for name in names:
            over, kinds = VARIANTS[name]
            variant = {**TUNED_VARIANT, **over}
            dev = _CudaDevice(True, variant)
            for kind in kinds:
                dev.begin(glue.EventTimer())
                if kind not in refs:
                    refs[kind] = reference(model, check, kind)
                sample_bad = mismatches(finished(model, check, kind,
                                                 raw(dev, model, check, kind, check_order)),
                                        refs[kind])
                dev.begin(glue.EventTimer())
                full = np.asarray(raw(dev, model, seqs, kind, order))    # warm-up + identity
                key = (M, kind)
                base.setdefault(key, full)
                differ = int((full != base[key]).sum())
                secs = []
                for _ in range(args.repeats):
                    timer = glue.EventTimer()
                    dev.begin(timer)
                    raw(dev, model, seqs, kind, order)
                    secs.append(timer.seconds()["kernel"])
                cells = M * seqs.n_residues
                med = float(np.median(secs))
                launch = dev.launches[-1]
                row = {"M": M, "kind": kind, "variant": name, "defines_over": over,
                       "kernel_s": secs, "median_s": med, "tcups": cells / med / 1e12,
                       "tcups_min": cells / max(secs) / 1e12, "tcups_max": cells / min(secs) / 1e12,
                       "registers": launch["registers"], "grid": launch["grid"],
                       "group": launch.get("GROUP"), "sample_mismatches": sample_bad,
                       "full_differ_from_first": differ}
                rows.append(row)
                print(f"M={M:5d} {kind:3s} {name:15s} {row['tcups']:7.3f} TCUPS "
                      f"[{row['tcups_min']:.3f}..{row['tcups_max']:.3f}] regs {row['registers']} "
                      f"sample-mismatch {sample_bad} differ {differ}", flush=True)
            dev.end()
    with open(args.json, "w") as f:
        json.dump({"db": args.db, "device": glue.device_attributes().get("name"),
                   "sizes": sizes, "repeats": args.repeats, "rows": rows}, f, indent=1)
    bad = [r for r in rows if r["sample_mismatches"] or r["full_differ_from_first"]]
    print(f"{len(rows)} rows, {len(bad)} with mismatches; {time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
