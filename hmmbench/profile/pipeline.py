"""Pipeline view: how many sequences pass each stage of HMMER's p7_Pipeline (no bias filter).

Stages and defaults as hmmsearch: MSV filter P <= F1 (0.02, Gumbel with the model's STATS
LOCAL MSV mu/lambda), Viterbi filter P <= F2 (1e-3, Gumbel VITERBI; skipped for sequences whose
MSV P is already <= F2), Forward P <= F3 (1e-5, exponential tail FORWARD tau/lambda). Scores in
bits are (raw nats - null1) / ln 2 with the null model configured to each target's length.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import LOG2, ProfileModel, SequenceSet

F1, F2, F3 = 0.02, 1e-3, 1e-5
SMALLX1 = 5e-9            # eslSMALLX1


def gumbel_surv(x, mu, lam) -> np.ndarray:
    """esl_gumbel_surv."""
    y = lam * (np.asarray(x, dtype=np.float64) - mu)
    with np.errstate(over="ignore"):
        ey = -np.exp(-y)
    return np.where(np.abs(ey) < SMALLX1, -ey, 1.0 - np.exp(ey))


def exp_surv(x, tau, lam) -> np.ndarray:
    """esl_exp_surv."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(x < tau, 1.0, np.exp(-lam * (x - tau)))


def seq_bits(score_nats, nullsc) -> np.ndarray:
    """HMMER's ``(float)((usc - nullsc) / eslCONST_LOG2)``."""
    diff = (np.asarray(score_nats, np.float32) - np.asarray(nullsc, np.float32)).astype(np.float32)
    return (diff.astype(np.float64) / LOG2).astype(np.float32)


@dataclass
class PassCounts:
    searched: int
    msv: int
    bias: int
    vit: int
    fwd: int

    def as_dict(self) -> dict:
        return dict(searched=self.searched, msv=self.msv, bias=self.bias, vit=self.vit,
                    fwd=self.fwd)


def pass_counts(model: ProfileModel, seqs: SequenceSet, msv_fn=None, vit_fn=None,
                fwd_fn=None, F1: float = F1, F2: float = F2, F3: float = F3):
    """(PassCounts, per-sequence stage reached 0..3) using the given score functions
    (defaults: the NumPy references); each is called only on the sequences that reach it."""
    from cpu_reference.profile import filters as pf
    from cpu_reference.profile import generic as pg
    msv_fn = msv_fn or pf.msv_filter
    vit_fn = vit_fn or pf.viterbi_filter
    fwd_fn = fwd_fn or pg.generic_forward
    ev = model.evalue
    L = seqs.lengths
    nonempty = L > 0
    nullsc = pg.null_score(L)
    stage = np.zeros(len(seqs), dtype=np.int8)

    msv = msv_fn(model, seqs)
    P = gumbel_surv(seq_bits(msv, nullsc), ev["m_mu"], ev["m_lambda"])
    past_msv = nonempty & (P <= F1)
    stage[past_msv] = 1

    need_vit = np.flatnonzero(past_msv & (P > F2))
    past_vit = past_msv & (P <= F2)
    if need_vit.size:
        vf = vit_fn(model, seqs.subset(need_vit))
        Pv = gumbel_surv(seq_bits(vf, nullsc[need_vit]), ev["v_mu"], ev["v_lambda"])
        past_vit[need_vit[Pv <= F2]] = True
    stage[past_vit] = 2

    idx = np.flatnonzero(past_vit)
    past_fwd = np.zeros(len(seqs), dtype=bool)
    if idx.size:
        fw = fwd_fn(model, seqs.subset(idx))
        Pf = exp_surv(seq_bits(fw, nullsc[idx]), ev["f_tau"], ev["f_lambda"])
        past_fwd[idx[Pf <= F3]] = True
    stage[past_fwd] = 3
    n_msv = int(past_msv.sum())
    return PassCounts(searched=len(seqs), msv=n_msv, bias=n_msv, vit=int(past_vit.sum()),
                      fwd=int(past_fwd.sum())), stage


def pyhmmer_pass_counts(hmm, block) -> PassCounts:
    """The same counts from pyhmmer's Pipeline(bias_filter=False) (peer/oracle)."""
    import pyhmmer
    pli = pyhmmer.plan7.Pipeline(hmm.alphabet, bias_filter=False)
    hits = pli.search_hmm(hmm, block)
    st = hits.__getstate__()["pipeline"]
    return PassCounts(searched=hits.searched_sequences, msv=st["n_past_msv"],
                      bias=st["n_past_bias"], vit=st["n_past_vit"], fwd=st["n_past_fwd"])


def main(argv=None) -> int:
    """``python3 -m hmmbench.profile.pipeline [--opencl]``: pass counts of every shipped protein
    model x the proteome, ours next to pyhmmer's Pipeline(bias_filter=False)."""
    import argparse
    from . import datasets
    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("--opencl", action="store_true", help="MSV and Viterbi filter on OpenCL")
    args = ap.parse_args(argv)
    msv_fn = vit_fn = None
    if args.opencl:
        from .opencl import ProfileFiltersOpenCL
        dev = ProfileFiltersOpenCL()
        msv_fn = lambda m, s: dev.scores(m, s, "msv")          # noqa: E731
        vit_fn = lambda m, s: dev.scores(m, s, "vf")           # noqa: E731
    seqs = datasets.load_proteome()
    block = seqs.to_pyhmmer()
    bad = 0
    print(f"{'model':30s} {'M':>5s}  ours msv/vit/fwd   pyhmmer msv/vit/fwd")
    for path in datasets.model_files():
        for hmm in datasets.read_hmms(path):
            if not hmm.alphabet.is_amino():
                continue
            model = ProfileModel.from_hmm(hmm)
            ours, _ = pass_counts(model, seqs, msv_fn, vit_fn)
            theirs = pyhmmer_pass_counts(hmm, block)
            same = ours.as_dict() == theirs.as_dict()
            bad += not same
            print(f"{model.name:30s} {model.M:5d}  {ours.msv:4d}/{ours.vit:3d}/{ours.fwd:3d}"
                  f"       {theirs.msv:4d}/{theirs.vit:3d}/{theirs.fwd:3d}"
                  f"  {'identical' if same else 'DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
