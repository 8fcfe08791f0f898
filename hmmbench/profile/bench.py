"""Timings of the profile workload on this machine: every available backend per score kind, plus
pyhmmer's Pipeline and the ``hmmsearch`` binary (PyPI ``hmmer``) as CPU peers.

    python3 -m hmmbench.profile.bench [--model PF02826.hmm] [--kinds ssv,msv,vf] [--every N]
        [--repeat R] [--json PATH]

Prints one row per (backend, kind): median seconds, sequences, GCUPS (M x residues / s).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

from . import datasets
from .job import ProfileSearch
from .model import ProfileModel


def _median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    from hmmbench import registry
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="PF02826.hmm")
    ap.add_argument("--kinds", default="ssv,msv,vf")
    ap.add_argument("--every", type=int, default=1, help="use every Nth protein")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    path = [p for p in datasets.model_files() if os.path.basename(p) == args.model][0]
    hmm = [h for h in datasets.read_hmms(path) if h.alphabet.is_amino()][0]
    model = ProfileModel.from_hmm(hmm)
    seqs = datasets.load_proteome()
    if args.every > 1:
        seqs = seqs.subset(range(0, len(seqs), args.every))
    rows = []

    def add(backend, kind, seconds, note=""):
        cells = model.M * seqs.n_residues
        rows.append(dict(backend=backend, kind=kind, seconds=seconds, sequences=len(seqs),
                         cells=cells, gcups=cells / seconds / 1e9, note=note))
        print(f"{backend:22s} {kind:8s} {seconds:9.4f} s  {len(seqs):6d} seqs  "
              f"{cells / seconds / 1e9:8.3f} GCUPS {note}", flush=True)

    for kind in args.kinds.split(","):
        job = ProfileSearch(model, seqs, kind, hmm)
        for b in registry.discover("profile"):
            if b.unavailable_reason() or b.refuse_reason(job):
                continue
            b.run(job)                                   # warm-up (kernel builds, caches)
            add(b.name, kind, _median_time(lambda: b.run(job), args.repeat), b.device_name())
    import pyhmmer
    block = seqs.to_pyhmmer()
    pli = lambda: pyhmmer.plan7.Pipeline(hmm.alphabet, bias_filter=False).search_hmm(hmm, block)
    add("pyhmmer-pipeline", "pipeline", _median_time(pli, args.repeat),
        f"(all stages, {os.cpu_count()} threads)")
    exe = shutil.which("hmmsearch")
    if exe:
        with tempfile.TemporaryDirectory() as tmp:
            fasta = os.path.join(tmp, "db.faa")
            with open(fasta, "wb") as fh:
                for s in block:
                    s.copy().textize().write(fh)
            cmd = [exe, "--nobias", "--cpu", "1", "-o", os.devnull, path, fasta]
            add("hmmsearch", "pipeline",
                _median_time(lambda: subprocess.run(cmd, check=True), args.repeat),
                "(binary, --nobias --cpu 1, incl. file parsing)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
