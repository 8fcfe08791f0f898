"""Host layout steps shared by the CUDA and OpenCL backends: one per data-placement strategy.

The inter-task families of both APIs place pairs the same way, so that a CUDA-vs-OpenCL ratio
compares the two compilers on the same memory traffic; only the per-row payload differs (the CUDA
kernels read precomputed float probabilities, the OpenCL kernels packed quality codes decoded on
the device).

- :func:`scratch_blocks`: where each group of lanes keeps its strip-boundary row vectors.
- :class:`SortedGroups`: Ren et al. 2018's data preparation -- pairs sorted by read length, then
  haplotype length, dealt into groups of ``lanes`` slots and stored lane-interleaved (row i of
  lane l of group g at ``(group_row[g] + i) * lanes + l``; haplotype bases four per 32-bit word,
  ``(group_hap4[g] + k) * lanes + l`` holding bases 4k..4k+3), so the lanes' loads coalesce.

Everything is vectorized NumPy; the row gather runs in cache-sized chunks on a few threads.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..model import N_CODE, PairSet, exclusive_cumsum

#: Interleaved rows gathered per task (small enough to stay in cache).
GATHER_CHUNK_ROWS = 8192


def group_max(values: np.ndarray, lanes: int) -> np.ndarray:
    """Max of ``values`` over each group of ``lanes`` consecutive slots (the last one padded)."""
    padded = np.zeros(-(-len(values) // lanes) * lanes, np.int64)
    padded[:len(values)] = values
    return padded.reshape(-1, lanes).max(axis=1)


def scratch_blocks(slot_n: np.ndarray, lanes: int, vec: int) -> tuple[np.ndarray, int]:
    """Row-vector scratch of the inter-task kernels, compacted per group of ``lanes`` slots.

    Columns kVEC..kVEC+VEC-1 of a lane live in block ``group_block[g] + k`` (``lanes * vec``
    values per block and field), so a group's blocks are contiguous and a lane's VEC-wide access
    coalesces with its neighbours'. Each group gets one spare block: strides of 2^k columns would
    put every group's accesses on the same DRAM channels. Returns (group_block, total blocks).
    """
    blocks = -(-group_max(slot_n, lanes) // vec) + 1
    return exclusive_cumsum(blocks), int(blocks.sum())


def in_pair_order(slot_values: np.ndarray, slot_pair, n_pairs: int) -> np.ndarray:
    """Per-slot results back in pair order: ``slot_pair[s]`` is the pair of slot s (-1: padding;
    None: slots are pairs already)."""
    if slot_pair is None:
        return slot_values
    filled = slot_pair >= 0
    out = np.empty(n_pairs, slot_values.dtype)
    out[slot_pair[filled]] = slot_values[:len(slot_pair)][filled]
    return out


def _index_dtype(limit: int):
    return np.int32 if limit < 2**31 else np.int64


def _in_chunks(fn, total: int, chunk: int) -> None:
    """fn(lo, hi) over [0, total) in chunks, on up to 8 threads (np.take releases the GIL)."""
    bounds = [(lo, min(lo + chunk, total)) for lo in range(0, total, chunk)]
    workers = min(8, os.cpu_count() or 1, len(bounds))
    if workers <= 1:
        for lo, hi in bounds:
            fn(lo, hi)
        return
    with ThreadPoolExecutor(workers) as pool:
        for fut in [pool.submit(fn, lo, hi) for lo, hi in bounds]:
            fut.result()


@dataclass
class SortedGroups:
    """Slots of the sorted, interleaved layout (see the module docstring).

    ``slot_pair[s]`` is the pair in slot s (-1: an empty padding slot, lengths 0);
    ``slot_m`` / ``slot_n`` the slots' read and haplotype lengths; ``group_row`` / ``group_hap4``
    each group's first interleaved read row / haplotype word (groups hold their longest read's
    rows and longest haplotype's words).
    """
    pairs: PairSet
    lanes: int
    slot_pair: np.ndarray
    slot_m: np.ndarray
    slot_n: np.ndarray
    group_row: np.ndarray
    group_hap4: np.ndarray

    @classmethod
    def build(cls, pairs: PairSet, lanes: int) -> "SortedGroups":
        P = pairs.n_pairs
        m_all, n_all = pairs.pair_read_lengths, pairs.pair_hap_lengths
        order = np.lexsort((n_all, m_all))  # read length, then haplotype length, ascending
        slots = -(-P // lanes) * lanes
        slot_pair = np.full(slots, -1, np.int64)
        slot_pair[:P] = order
        slot_m = np.zeros(slots, np.int32)
        slot_n = np.zeros(slots, np.int32)
        slot_m[:P], slot_n[:P] = m_all[order], n_all[order]
        group_row = exclusive_cumsum(group_max(slot_m, lanes))
        group_hap4 = exclusive_cumsum((group_max(slot_n, lanes) + 3) // 4)
        return cls(pairs, lanes, slot_pair, slot_m, slot_n, group_row, group_hap4)

    @property
    def n_slots(self) -> int:
        return len(self.slot_pair)

    @property
    def n_groups(self) -> int:
        return self.n_slots // self.lanes

    def read_rows(self, *fields) -> tuple[np.ndarray, ...]:
        """Per-read-position data, interleaved. Each argument is a 1-D array indexed like
        ``pairs.read_bases`` (gives a (rows, lanes) array) or F such arrays of one dtype, as a 2-D
        array or a list (gives (rows, F, lanes)). Rows past a lane's read hold position 0's values
        (never read)."""
        pairs, lanes, G = self.pairs, self.lanes, self.n_groups
        P = pairs.n_pairs
        group_m = self.slot_m.reshape(G, lanes)
        idx = _index_dtype(len(pairs.read_bases))
        read_start = np.zeros(self.n_slots, idx)
        read_start[:P] = pairs.read_offsets[pairs.pair_read[self.slot_pair[:P]]]
        read_start = read_start.reshape(G, lanes)
        row_group = np.repeat(np.arange(G), group_max(self.slot_m, lanes))
        row_pos = (np.arange(len(row_group)) - self.group_row[row_group]).astype(idx)
        single = [isinstance(f, np.ndarray) and f.ndim == 1 for f in fields]
        groups = [[f] if one else list(f) for f, one in zip(fields, single)]
        outs = [np.empty((len(row_group), len(g), lanes), np.asarray(g[0]).dtype) for g in groups]

        def gather(lo: int, hi: int) -> None:
            g, pos = row_group[lo:hi], row_pos[lo:hi, None]
            src = read_start[g] + pos
            src[pos >= group_m[g]] = 0
            for out, arrays in zip(outs, groups):
                for k, arr in enumerate(arrays):
                    out[lo:hi, k, :] = np.take(arr, src)

        _in_chunks(gather, len(row_group), GATHER_CHUNK_ROWS)
        return tuple(o.reshape(len(row_group), lanes) if one else o for o, one in zip(outs, single))

    def hap_words(self) -> np.ndarray:
        """(words, lanes) uint32: byte b of word k of a lane = haplotype base 4k + b (N past the
        lane's haplotype, never read)."""
        pairs, lanes, G = self.pairs, self.lanes, self.n_groups
        P = pairs.n_pairs
        words_per_group = (group_max(self.slot_n, lanes) + 3) // 4
        hidx = _index_dtype(len(pairs.hap_bases) + 4)
        hap_start = np.zeros(self.n_slots, hidx)
        hap_start[:P] = pairs.hap_offsets[pairs.pair_hap[self.slot_pair[:P]]]
        col_group = np.repeat(np.arange(G), words_per_group)
        col_pos = (np.arange(len(col_group)) - self.group_hap4[col_group]).astype(hidx)
        out = np.empty((len(col_group), lanes, 4), np.uint8)
        gstart = hap_start.reshape(G, lanes)[col_group]
        glen = self.slot_n.reshape(G, lanes)[col_group]
        for b in range(4):
            pos = 4 * col_pos[:, None] + b
            valid = pos < glen
            out[:, :, b] = np.where(valid, pairs.hap_bases[np.where(valid, gstart + pos, 0)],
                                    N_CODE)
        return out.view(np.uint32).reshape(len(col_group), lanes)
