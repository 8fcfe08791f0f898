"""What a profile cell's memory estimate reads (:meth:`hmmbench.backend.Backend.memory_need`):
the database's sequences, residues and longest sequence, the model length and the kind --
known from a generated database's name (nothing generated) or a file database's lengths, and
from the cell's model (nothing loaded)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Optional

import numpy as np

#: generate_proteins' defaults: lognormal lengths of this mean and sigma, clipped to these
MEAN_LENGTH, SIGMA, MIN_LENGTH, MAX_LENGTH = 360.0, 0.6, 30, 35000
#: a sequence's bytes besides its residues: its offset and its name (a short Python string)
SEQUENCE_BYTES = 8 + 80


@dataclass(frozen=True)
class ProfileShape:
    """One profile cell's unit: ``models`` models of at most ``M`` positions, scored (``kind``)
    against a database of ``sequences`` sequences, ``residues`` residues in all, the longest
    ``max_length``."""
    residues: int
    sequences: int
    max_length: int
    M: int
    kind: str
    models: int = 1
    #: known from a generated database's name: its lengths follow generate_proteins' lognormal
    from_name: bool = False
    #: a loaded database's lengths, sorted (its batches exactly); None from a name
    lengths: Optional[np.ndarray] = field(default=None, compare=False, repr=False)

    #: the most held while the database is made (not modelled: what it keeps, ``held``)
    making_bytes = 0

    @property
    def nbytes(self) -> int:
        """The database as it is held (codes, offsets, names)."""
        return self.residues + SEQUENCE_BYTES * self.sequences

    @property
    def held(self) -> int:
        """What the runner holds beside a call: the database."""
        return self.nbytes

    @classmethod
    def generated(cls, residues: int, M: int, kind: str, models: int = 1) -> "ProfileShape":
        """A generated database's shape from its size alone: the expected number of sequences
        and, as its longest, the length only one sequence in twice their number passes."""
        n = max(1, math.ceil(residues / MEAN_LENGTH))
        mu = math.log(MEAN_LENGTH) - SIGMA ** 2 / 2
        z = NormalDist().inv_cdf(1 - 1 / (2 * n)) if n > 1 else 0.0
        longest = min(MAX_LENGTH, max(MIN_LENGTH, math.ceil(math.exp(mu + SIGMA * z))))
        return cls(residues, n, min(longest, max(MIN_LENGTH, residues)), M, kind, models,
                   from_name=True)

    def padded_batch(self, per: int) -> int:
        """The most residues a batch of ``per`` length-sorted sequences pads to (its
        sequences x the longest of them), of :meth:`batches`: a loaded database's widest batch;
        a generated one's (whose lengths are known by their distribution) the batch of the
        longest ones or the last full batch before it, whichever pads to more."""
        return max((padded for _, _, padded in self.batches(per)), default=0)

    def batches(self, per: int) -> list:
        """(sequences, residues, padded cells) of the batches of ``per`` length-sorted
        sequences that may hold the most: a loaded database's every batch; from a name, the
        batch of the longest and the last full batch before it (their residues expected from
        the lognormal; their cells: the longest's x the longest length, the last full batch's
        x the length at the quantile it ends at)."""
        per = max(1, min(per, self.sequences))
        if self.lengths is not None:
            out = []
            for s in range(0, len(self.lengths), per):
                part = self.lengths[s:s + per]
                out.append((len(part), int(part.sum()), len(part) * int(part[-1])))
            return out
        full, rest = divmod(self.sequences, per)
        longest = rest or per
        # expected from the lognormal, and one longest sequence more (a few long ones vary most)
        tail = self.sequences * MEAN_LENGTH * (1 - _below(1 - longest / self.sequences))
        out = [(longest, min(self.residues, longest * self.max_length,
                             math.ceil(tail) + self.max_length), longest * self.max_length)]
        if rest and full:
            q0, q1 = (full - 1) * per / self.sequences, full * per / self.sequences
            expected = self.sequences * MEAN_LENGTH * (_below(q1) - _below(q0))
            out.append((per, min(self.residues, math.ceil(expected)),
                        per * _length_at(q1)))
        return out

    @classmethod
    def of(cls, seqs, M: int, kind: str, models: int = 1) -> "ProfileShape":
        """A loaded database's shape."""
        lengths = seqs.lengths
        return cls(int(seqs.n_residues), len(seqs), int(lengths.max()) if len(seqs) else 0,
                   M, kind, models, lengths=np.sort(lengths))


def _length_at(q: float) -> int:
    """generate_proteins' length at quantile ``q`` of its lognormal, clipped as it clips."""
    mu = math.log(MEAN_LENGTH) - SIGMA ** 2 / 2
    z = NormalDist().inv_cdf(min(max(q, 1e-12), 1 - 1e-12))
    return min(MAX_LENGTH, max(MIN_LENGTH, math.ceil(math.exp(mu + SIGMA * z))))


def _below(q: float) -> float:
    """The share of generate_proteins' expected residues in sequences below quantile ``q``
    (the lognormal's partial expectation, unclipped)."""
    if q <= 0:
        return 0.0
    z = NormalDist().inv_cdf(min(q, 1 - 1e-12))
    return NormalDist().cdf(z - SIGMA)
