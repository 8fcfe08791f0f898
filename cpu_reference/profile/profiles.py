"""What the references read of a profile and of a sequence database: arrays, no class of ours.

``hmmbench.profile.model.ProfileModel`` and ``SequenceSet`` have these fields; any object that
has them runs through :mod:`.filters` and :mod:`.generic` the same way.
"""
from __future__ import annotations

from typing import Optional, Protocol

import numpy as np


class ByteProfile(Protocol):
    """The MSV/SSV byte profile (HMMER's p7_oprofile bytes): costs ``cost[x, k]``, saturated."""
    scale: float
    base: int
    bias: int
    cost: np.ndarray
    tbm: int
    tec: int

    def tjb(self, L) -> np.ndarray: ...


class WordProfile(Protocol):
    """The Viterbi filter's int16 profile: ``match[x, k]``, transitions ``tsc``, lazy-F bound."""
    scale: float
    base: int
    match: np.ndarray
    tsc: np.ndarray
    ddbound: int
    e_loop: int
    e_move: int

    def move(self, L, nj: float = 1.0) -> np.ndarray: ...


class Profile(Protocol):
    """A configured search profile (local multihit): float32 log-odds ``match_scores[x, k]`` and
    ``insert_scores[x, k]``, transition scores ``tsc[t, k]`` in constants.TRANSITIONS order."""
    M: int
    match_scores: np.ndarray
    insert_scores: np.ndarray
    tsc: np.ndarray
    byte: Optional[ByteProfile]
    word: Optional[WordProfile]

    def specials(self, L): ...

    @property
    def e_move(self) -> np.float32: ...

    @property
    def e_loop(self) -> np.float32: ...


class Sequences(Protocol):
    """Digitized sequences, flat: codes of sequence i are ``residues[offsets[i]:offsets[i+1]]``."""
    residues: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray: ...

    def padded(self, idx, fill: int = 0) -> np.ndarray: ...
