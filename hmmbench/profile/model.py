"""Flat NumPy data model of HMMER3 search profiles and digitized protein sequences.

pyhmmer does the parsing, digitizing and profile configuration (local multihit); this module
turns its configured profile into arrays and quantizes them exactly as HMMER 3.4's
``p7_oprofile`` conversion does (own code, written from the documented rules):

* MSV/SSV byte profile: ``scale_b = 3/ln2`` (third-bits), ``base_b = 190``,
  ``bias_b = -round(scale_b * -max_score)``, match cost = ``bias_b - round(scale_b * msc)``
  saturated to 255 (255 = prohibited); ``tbm_b``, ``tec_b``, ``tjb_b(L)`` unbiased costs.
* Viterbi-filter word profile: ``scale_w = 500/ln2``, ``base_w = 12000``, scores
  ``round(scale_w * sc)`` saturated to int16 (-32768 = -infinity); II capped at -1; lazy-F bound.

All arrays here are indexed by model position k (0..M), not striped: striping is a layout
choice of the kernels.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

# HMMER's transition order and ln 2 are the references' as much as the model's: the NumPy
# reference defines them, the model and the kernels' hosts take them from there.
from cpu_reference.profile.constants import (LOG2, T_BM, T_DD, T_DM, T_II, T_IM,  # noqa: F401
                                             T_MD, T_MI, T_MM, TRANSITIONS)

#: HMMER's p7H order in hmm->t (pyhmmer HMM.transition_probabilities columns).
H_MM, H_MI, H_MD, H_IM, H_II, H_DM, H_DD = range(7)

AMINO_SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"
AMINO_K, AMINO_KP = 20, 29
STOP_CODE = 27                      # '*'
WORD_NEG_INF = -32768


def roundf(x) -> np.ndarray:
    """C ``roundf`` (half away from zero) of float32 values, exact (done in float64)."""
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def f32(x) -> np.float32:
    return np.float32(x)


@dataclass
class SequenceSet:
    """Digitized sequences, flat: codes of sequence i are ``residues[offsets[i]:offsets[i+1]]``."""
    names: list
    residues: np.ndarray          # uint8 digital codes (HMMER amino alphabet, 0..28)
    offsets: np.ndarray           # int64, n+1
    alphabet: str = "amino"

    def __post_init__(self):
        self.residues = np.ascontiguousarray(self.residues, dtype=np.uint8)
        self.offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        if self.offsets.shape != (len(self.names) + 1,) or self.offsets[-1] != self.residues.size:
            raise ValueError("offsets do not match names/residues")

    def __len__(self) -> int:
        return len(self.names)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_residues(self) -> int:
        return int(self.residues.size)

    def codes(self, i: int) -> np.ndarray:
        return self.residues[self.offsets[i]:self.offsets[i + 1]]

    def subset(self, idx: Sequence[int]) -> "SequenceSet":
        idx = np.asarray(idx, dtype=np.int64)
        lens = self.lengths[idx]
        offs = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(lens, out=offs[1:])
        res = (np.concatenate([self.codes(int(i)) for i in idx]) if len(idx)
               else np.zeros(0, np.uint8))
        return SequenceSet([self.names[int(i)] for i in idx], res, offs, self.alphabet)

    def slice(self, start: int, stop: int) -> "SequenceSet":
        """Sequences ``start:stop`` (a view of the residues, no copy)."""
        o = self.offsets
        return SequenceSet(self.names[start:stop], self.residues[o[start]:o[stop]],
                           o[start:stop + 1] - o[start], self.alphabet)

    def padded(self, idx: Sequence[int], fill: int = 0) -> np.ndarray:
        """(len(idx), max length) uint8 matrix of codes, padded with ``fill``."""
        idx = np.asarray(idx, dtype=np.int64)
        lens = self.lengths[idx]
        width = int(lens.max()) if len(idx) else 0
        out = np.full((len(idx), width), fill, dtype=np.uint8)
        # one index per residue, not per cell of the matrix (a length batch's widths differ)
        rows = np.repeat(np.arange(len(idx)), lens)
        cols = np.arange(rows.size) - np.repeat(np.cumsum(lens) - lens, lens)
        out[rows, cols] = self.residues[np.repeat(self.offsets[idx], lens) + cols]
        return out

    def to_pyhmmer(self, idx: Optional[Sequence[int]] = None):
        """A pyhmmer DigitalSequenceBlock of (some of) these sequences (for oracles/peers)."""
        import pyhmmer  # optional dependency, imported on first use
        abc = pyhmmer.easel.Alphabet.amino()
        idx = range(len(self)) if idx is None else idx
        seqs = [pyhmmer.easel.DigitalSequence(abc, name=str(self.names[i]).encode(),
                                              sequence=self.codes(int(i)).copy())
                for i in idx]
        return pyhmmer.easel.DigitalSequenceBlock(abc, seqs)

    @classmethod
    def from_pyhmmer(cls, block) -> "SequenceSet":
        names, parts = [], []
        for s in block:
            n = s.name
            names.append(n.decode() if isinstance(n, bytes) else str(n))
            parts.append(np.asarray(s.sequence, dtype=np.uint8))
        lens = np.array([p.size for p in parts], dtype=np.int64)
        offs = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum(lens, out=offs[1:])
        res = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        return cls(names, res, offs)


@dataclass
class ByteProfile:
    """MSV/SSV 8-bit profile (HMMER mf_conversion/sf_conversion semantics), unstriped."""
    scale: np.float32
    base: int
    bias: int
    tbm: int
    tec: int
    cost: np.ndarray               # uint8 (Kp, M): biased match cost of residue x at k=1..M

    def tjb(self, L) -> np.ndarray:
        """N/J->B cost for target length(s) L (p7_oprofile_ReconfigMSVLength)."""
        L = np.asarray(L, dtype=np.float32)
        sc = np.log(np.float32(3.0) / (L + np.float32(3.0)))   # float32 division as in C
        return unbiased_byteify(self.scale, sc)

    @property
    def signed_cost(self) -> np.ndarray:
        """SSV's signed costs ``cost - bias`` (HMMER's sbv, as int8 values)."""
        return (self.cost.astype(np.int16) - self.bias).astype(np.int16)


@dataclass
class WordProfile:
    """Viterbi-filter 16-bit profile (HMMER vf_conversion semantics), unstriped, int16 values."""
    scale: np.float32
    base: int
    match: np.ndarray              # int16 (Kp, M+1); column 0 unused (-32768)
    tsc: np.ndarray                # int16 (8, M+1): tsc[t, k] = wordified TSC(k, t), HMMER's masks
    e_loop: int
    e_move: int
    ddbound: int

    def move(self, L, nj: float = 1.0) -> np.ndarray:
        """N/C/J MOVE word score for target length(s) L (p7_oprofile_ReconfigRestLength)."""
        L = np.asarray(L, dtype=np.float32)
        nj = np.float32(nj)
        pmove = (np.float32(2.0) + nj) / (L + np.float32(2.0) + nj)
        return wordify(self.scale, np.log(pmove.astype(np.float32)))


def unbiased_byteify(scale, sc) -> np.ndarray:
    cost = -roundf(np.float32(scale) * np.asarray(sc, dtype=np.float32))
    return np.where(cost > 255.0, 255, cost).astype(np.int64)


def biased_byteify(scale, bias: int, sc) -> np.ndarray:
    cost = -roundf(np.float32(scale) * np.asarray(sc, dtype=np.float32))
    # (uint8)cost + bias: the cast wraps negative costs, the sum wraps in uint8; since
    # cost >= -bias the result is simply cost + bias.
    return np.where(cost > 255 - bias, 255, cost + bias).astype(np.uint8)


def wordify(scale, sc) -> np.ndarray:
    v = roundf(np.float32(scale) * np.asarray(sc, dtype=np.float32))
    return np.clip(v, -32768, 32767).astype(np.int16)


def length_specials(L, nj: float):
    """(loop, move) float32 N/C/J transition scores for target length(s) L and expected J
    passes ``nj`` (p7_ReconfigLength; the model's own: :meth:`ProfileModel.specials`)."""
    L = np.asarray(L, dtype=np.float32)
    nj = np.float32(nj)
    pmove = (np.float32(2.0) + nj) / (L + np.float32(2.0) + nj)
    ploop = np.float32(1.0) - pmove
    return np.log(ploop).astype(np.float32), np.log(pmove).astype(np.float32)


@dataclass
class ProfileModel:
    """A configured HMMER3 search profile (local multihit) as arrays.

    ``match_scores[x, k]``/``insert_scores[x, k]``: float32 log-odds (nats) of residue code x at
    node k (k = 0 column is -inf), as HMMER's gm->rsc. ``tsc[t, k]``: float32 transition scores
    TSC(k, t) with HMMER's storage (t in TRANSITIONS order; BM stored off by one: tsc[BM, k-1]
    is B->M_k). Length-dependent specials come from :meth:`specials`.
    """
    name: str
    M: int
    match_scores: np.ndarray
    insert_scores: np.ndarray
    tsc: np.ndarray
    nj: float = 1.0
    evalue: dict = field(default_factory=dict)   # m_mu, m_lambda, v_mu, v_lambda, f_tau, f_lambda
    byte: Optional[ByteProfile] = None
    word: Optional[WordProfile] = None
    K: int = AMINO_K
    Kp: int = AMINO_KP
    #: float32 mean residue composition of the model (HMMER's hmm->compo, K values) and the
    #: null model's background frequencies: the bias filter's two states (None: not known)
    composition: Optional[np.ndarray] = None
    background: Optional[np.ndarray] = None

    # -- length model (p7_ReconfigLength) --
    def specials(self, L):
        """(loop, move) float32 N/C/J transition scores for target length(s) L."""
        return length_specials(L, self.nj)

    #: E->C and E->J (multihit: log 0.5 each)
    @property
    def e_move(self) -> np.float32:
        return np.float32(-LOG2)

    @property
    def e_loop(self) -> np.float32:
        return np.float32(-LOG2)

    # -- construction --
    @classmethod
    def from_hmm(cls, hmm, background=None) -> "ProfileModel":
        import pyhmmer  # optional dependency, imported on first use
        abc = hmm.alphabet
        if not abc.is_amino():
            raise ValueError(f"model {hmm.name!r} is not a protein model")
        bg = background or pyhmmer.plan7.Background(abc)
        gm = pyhmmer.plan7.Profile(hmm.M, abc)
        gm.configure(hmm, bg, L=400, multihit=True, local=True)
        M = hmm.M
        rsc = np.asarray(gm.emission_scores, dtype=np.float32)[:, :(M + 1) * 2]
        rsc = rsc.reshape(abc.Kp, M + 1, 2)
        tsc = local_transition_scores(np.asarray(hmm.transition_probabilities, dtype=np.float32))
        name = hmm.name.decode() if isinstance(hmm.name, bytes) else str(hmm.name)
        ep = hmm.evalue_parameters
        vec = list(ep.as_vector()) if hasattr(ep, "as_vector") else [None] * 6
        # (m_mu's property is broken in pyhmmer 0.12.3: read it from the vector)
        evalue = dict(m_mu=vec[0], m_lambda=ep.m_lambda, v_mu=ep.v_mu, v_lambda=ep.v_lambda,
                      f_tau=ep.f_tau, f_lambda=ep.f_lambda)
        model = cls(name=name, M=M, match_scores=np.ascontiguousarray(rsc[:, :, 0]),
                    insert_scores=np.ascontiguousarray(rsc[:, :, 1]), tsc=tsc, evalue=evalue,
                    K=abc.K, Kp=abc.Kp,
                    composition=composition_of(hmm),
                    background=np.asarray(bg.residue_frequencies, np.float32)[:abc.K].copy())
        model.byte = byte_profile(model)
        model.word = word_profile(model)
        return model


def composition_of(hmm) -> np.ndarray:
    """The HMM's mean residue composition (its COMPO line, hmm->compo) as float32; zeros when
    the HMM has none: what HMMER 3.4's hmmsearch and pyhmmer's Pipeline then run the bias
    filter with (its second state emits nothing; their pass counts on the shipped models
    without a COMPO line, KR, PF02826 and Thioesterase, agree with zeros and with nothing
    else tried: the unset -1.0, the background, p7_hmm_SetComposition's)."""
    compo = getattr(hmm, "composition", None)
    K = hmm.alphabet.K
    if compo is None:
        return np.zeros(K, np.float32)
    return np.asarray(compo, np.float32)[:K].copy()


def match_occupancy(t: np.ndarray) -> np.ndarray:
    """p7_hmm_CalculateOccupancy's match occupancy, float32 like HMMER."""
    M = t.shape[0] - 1
    occ = np.zeros(M + 1, dtype=np.float32)
    one = np.float32(1.0)
    occ[1] = t[0, H_MI] + t[0, H_MM]
    for k in range(2, M + 1):
        occ[k] = occ[k - 1] * (t[k - 1, H_MM] + t[k - 1, H_MI]) + (one - occ[k - 1]) * t[k - 1, H_DM]
    return occ


def local_transition_scores(t: np.ndarray) -> np.ndarray:
    """gm->tsc of p7_ProfileConfig in local mode: log of float probabilities (double log,
    stored as float), -inf where HMMER leaves it so; local entry log(occ[k]/Z)."""
    M = t.shape[0] - 1
    tsc = np.full((8, M + 1), -np.inf, dtype=np.float32)
    occ = match_occupancy(t)
    Z = np.float32(0.0)
    for k in range(1, M + 1):
        Z = np.float32(Z + occ[k] * np.float32(M - k + 1))
    with np.errstate(divide="ignore"):
        tsc[T_BM, 0:M] = np.log((occ[1:] / Z).astype(np.float64)).astype(np.float32)
        tp = t[1:M].astype(np.float64)
        for dst, src in ((T_MM, H_MM), (T_MI, H_MI), (T_MD, H_MD), (T_IM, H_IM), (T_II, H_II),
                         (T_DM, H_DM), (T_DD, H_DD)):
            tsc[dst, 1:M] = np.log(tp[:, src]).astype(np.float32)
    return tsc


def byte_profile(model: ProfileModel) -> ByteProfile:
    M, K = model.M, model.K
    scale = np.float32(3.0 / LOG2)
    both = np.concatenate([model.match_scores[:K], model.insert_scores[:K]], axis=1)
    mx = max(0.0, float(np.max(both)))
    bias = int(unbiased_byteify(scale, np.float32(-mx)))
    cost = biased_byteify(scale, bias, model.match_scores[:, 1:M + 1])
    tbm = int(unbiased_byteify(scale, np.log(np.float32(2.0) / (np.float32(M) * np.float32(M + 1)))))
    tec = int(unbiased_byteify(scale, np.log(np.float32(0.5))))
    return ByteProfile(scale=scale, base=190, bias=bias, tbm=tbm, tec=tec, cost=cost)


def word_profile(model: ProfileModel) -> WordProfile:
    M = model.M
    scale = np.float32(500.0 / LOG2)
    match = np.full((model.Kp, M + 1), WORD_NEG_INF, dtype=np.int16)
    match[:, 1:] = wordify(scale, model.match_scores[:, 1:])
    tsc = np.full((8, M + 1), WORD_NEG_INF, dtype=np.int16)
    # HMMER keeps only k < M for every transition (kb + z*nq < M), BM/MM/IM/DM from k = 0
    for t in range(8):
        lo = 0 if t in (T_BM, T_MM, T_IM, T_DM) else 1
        tsc[t, lo:M] = wordify(scale, model.tsc[t, lo:M])
    tsc[T_II] = np.minimum(tsc[T_II], -1)     # no zero-cost II
    for t in (T_BM, T_MM, T_IM, T_DM, T_MD, T_MI):
        tsc[t] = np.minimum(tsc[t], 0)
    # max over k = 2..M-2 of DD(k) + DM(k+1) - BM(k+1), in words (whole rows at once)
    w = lambda t, lo, hi: wordify(scale, model.tsc[t, lo:hi]).astype(np.int64)   # noqa: E731
    bound = w(T_DD, 2, M - 1) + w(T_DM, 3, M) - w(T_BM, 3, M)
    ddbound = max(WORD_NEG_INF, int(bound.max())) if bound.size else WORD_NEG_INF
    return WordProfile(scale=scale, base=12000, match=match, tsc=tsc,
                       e_loop=int(wordify(scale, np.float32(-LOG2))),
                       e_move=int(wordify(scale, np.float32(-LOG2))), ddbound=ddbound)
