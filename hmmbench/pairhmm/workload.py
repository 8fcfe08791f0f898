"""The Pair-HMM workload as the core sees it: its datasets, chunking, backends and CLI parts."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..fileio import atomic_open, check_not_input
from ..report import Column, Listing, Styled, fmt_count
from ..workload import Workload
from . import datasets
from .datasets.chunking import launches, parse_mode
from .datasets.chunks import (LazyChunkDataset, PlanLengths, plan_shape, plan_unit_ranges,
                              plan_units)
from .datasets.synthetic import TABLES, shape_of, split_name, synthetic_bytes
from .model import LOG10_RANGE_FLOOR
from .shape import PairShape, drawn_shape, sampled_groups


def _dataset_status(ds) -> str:
    if ds.kind in ("synthetic", "chunks") and ds.path is None:
        return "generated"
    if ds.path and Path(ds.path).exists():
        return "found"
    return "missing"


class PairHMM(Workload):
    name = "pairhmm"
    reference = "numpy"
    item_noun = "pairs"
    sample_items = 2000
    #: likelihoods past GATK's float64 range (model.LOG10_RANGE_FLOOR) agree when both are there
    range_floor = LOG10_RANGE_FLOOR
    backend_specs = (
        "hmmbench.pairhmm.reference:backends",
        "hmmbench.pairhmm.intertask.cuda:backends",
        "hmmbench.pairhmm.subwarp.variants:backends",
        "hmmbench.pairhmm.intertask.opencl:backends",
        "hmmbench.pairhmm.subwarp.opencl:backends",
        "hmmbench.pairhmm.peers:backends",
    )

    def resolve(self, names: list) -> list:
        if names:
            return [datasets.resolve(n) for n in names]
        return [datasets.resolve(d) if isinstance(d, str) else d
                for d in datasets.default_run_set()]

    def plan(self, options, backends: list) -> tuple:
        return self.resolve(list(options.datasets)), {}

    def launches(self, unit, mode: str) -> list:
        return launches(unit, mode)

    def check_chunking(self, mode: str) -> None:
        parse_mode(mode)

    def launch_items(self, mode: str) -> int:
        """``merged:N``'s N (0 for ``original`` and ``merged``)."""
        return parse_mode(mode)[1]

    def length_point(self, dataset: str):
        """Generated sets whose pairs all share one shape: ``equal-L`` (the peak runs), Ren et
        al.'s tables, ``shape-RxH``. The series keeps the size suffix (``equal@1e6``); L is the
        haplotype length, which grows along each series; grids (ren18-t3, shape-R x H) get one
        series per read length."""
        base, _, _ = split_name(dataset)
        try:
            shape = shape_of(base)
        except UserError:
            return None
        if shape is None:
            return None
        read, hap, _ = shape
        suffix = dataset[len(base):]
        table = base.rsplit(".", 1)[0]
        if table in TABLES:
            haps = [h for _, h in TABLES[table][1]]
            grid = len(set(haps)) < len(haps)
            return f"{table}{suffix}" + (f" (read {read})" if grid else ""), hap
        if re.fullmatch(r"equal-\d+", base):
            return f"equal{suffix}", hap
        return f"shape{suffix} (read {read})", hap

    def shard_costs(self, unit):
        """Cells per batch: every read of a batch meets every haplotype of it."""

        def per_batch(lengths, bounds):
            cum = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
            return cum[bounds[1:]] - cum[bounds[:-1]]
        return per_batch(unit.read_lengths, unit.batch_reads) * \
            per_batch(unit.hap_lengths, unit.batch_haps)

    def shard(self, unit, start: int, stop: int):
        return unit.select_batches(start, stop)

    def unit_shape(self, dataset, mode: str = "merged"):
        """A generated set's shape from its parameters (nothing generated; what generating it
        takes, its ``making_bytes``; a chunk set's from
        its plan of lengths: its largest unit in chunking ``mode``, its pieces joined as the
        runner joins them); a file set's from the loaded set (kept only if it was loaded
        already)."""
        p = dataset.params
        if dataset.kind == "synthetic" and {"read_length", "hap_length", "pairs"} <= p.keys():
            rpb, hpb = p["reads_per_batch"], p["haps_per_batch"]
            full, rem = divmod(p["pairs"], rpb * hpb)
            shape = PairShape.fixed(p["read_length"], p["hap_length"],
                                    n_reads=rpb * full + (1 if rem else 0),
                                    n_haps=hpb * full + rem, n_pairs=p["pairs"],
                                    batches=full + (1 if rem else 0),
                                    batch_reads=rpb if full else 1,
                                    batch_haps=hpb if full else rem)
            return replace(shape, making_bytes=synthetic_bytes(
                p["read_length"], p["hap_length"], p["pairs"]))
        if isinstance(dataset, LazyChunkDataset):
            return plan_shape(dataset.plan, self.launch_items(mode) if dataset.lazy else None)
        if dataset.lazy:
            return None
        loaded = dataset._cache is not None
        shape = PairShape.of(dataset.load())
        if not loaded:
            dataset._cache = None                      # read again at its turn, not held meanwhile
        return shape

    def planned_units(self, dataset, join: int):
        """A chunk set's, from its plan of lengths (:func:`.datasets.chunks.plan_units`)."""
        if isinstance(dataset, LazyChunkDataset) and dataset.lazy:
            return plan_units(dataset.plan, join)
        return None

    def loaded_shape(self, unit, detailed: bool = True):
        return PairShape.of(unit, groups=detailed)

    def sample_shape(self, shape, items: int):
        """Each sampled pair a batch of its own, its read and haplotype copied
        (``PairSet.subset_pairs``), drawn through an int64 index of every position and its
        running sum (16 bytes a position) beside the copy."""
        alone = shape.each_pair_alone()
        n = min(items, shape.pairs)
        sample = alone.part(int(np.ceil(alone.read_bases * n / max(alone.pairs, 1))))
        bases = sample.read_bases + sample.hap_bases
        sample = replace(sample, pairs=n, reads=n, haps=n, batches=n, held_bytes=None, pieces=1,
                         groups=None if shape.groups is None else sampled_groups(shape.groups, n))
        return replace(sample, making_bytes=sample.nbytes + 16 * bases)

    def sample_shapes(self, dataset, mode: str, per_piece: int, join=None):
        """Each unit's sampled pairs as the check draws them, each pair a batch of its own: a
        chunk set's found in its plan of lengths (:meth:`.datasets.chunks.PlanLengths.pair_lengths`),
        a file set's in the loaded set (one unit; kept only if it was loaded already). A
        generated set of one length is shaped from its name (:meth:`sample_shape`)."""
        from ..runner.check import sample_indexes
        if not isinstance(dataset, LazyChunkDataset):
            if join or dataset.lazy or dataset.kind == "synthetic":
                return None
            loaded = dataset._cache is not None
            pairs = dataset.load()
            if not loaded:
                dataset._cache = None                  # read again at its turn, as unit_shape
            idx = sample_indexes(pairs.n_pairs, per_piece, 0)
            return [drawn_shape(pairs.pair_read_lengths[idx], pairs.pair_hap_lengths[idx],
                                max(len(pairs.read_lengths), len(pairs.hap_lengths)))]
        plan = dataset.plan
        lengths = PlanLengths(plan)
        if join:
            units = plan_units(plan, join).units
        else:
            units = plan_unit_ranges(plan, self.launch_items(mode) if dataset.lazy else None,
                                     lengths)
        starts = [a for a, _ in plan.pieces()]
        out = []
        for seed, (a, b) in enumerate(units):
            pieces = join or sum(1 for s in starts if a <= s < b)
            idx = sample_indexes(int(lengths.pairs[a:b].sum()), per_piece * pieces, seed)
            rows = max(int(lengths.r[a:b].sum()), int(lengths.h[a:b].sum()))
            out.append(drawn_shape(*lengths.pair_lengths(a, b, idx), rows))
        return out

    def measured_unit(self, cell: str) -> tuple:
        """A dataset by name: the loaded set and its shape."""
        pairs = self.resolve([cell])[0].load()
        return pairs, PairShape.of(pairs), None

    def fetch(self, name: str):
        return datasets.fetch(name)

    def catalog_tables(self) -> list:
        t = Listing("datasets", [Column("name", key=True), Column("kind", priority=2),
                                 Column("pairs", right=True, priority=1),
                                 Column("cells", right=True, priority=1),
                                 Column("where", priority=0),
                                 Column("description", wrap=True, priority=3)])
        for ds in datasets.catalog():
            status = _dataset_status(ds)
            style = {"found": "green", "missing": "yellow"}.get(status, "")
            # a chunk set's cells come from its plan, drawn when it runs (seconds for NA12878's)
            cells = fmt_count(ds.n_cells) if getattr(ds, "plan_drawn", True) else "when run"
            t.add(ds.name, ds.kind, fmt_count(ds.n_pairs), cells,
                  Styled(status, style), ds.description)
        return [t]

    def score(self, options, backend) -> int:
        """One log10 likelihood per pair, dataset order."""
        ds = self.resolve([options.dataset])[0]
        check_not_input(options.output, "--output", [ds.path])    # a real set found by name
        fmt = f"%.{options.digits}f\n"
        n = 0
        # Streamed chunk by chunk (lazy sets are larger than memory), renamed into place at the end.
        with atomic_open(options.output) as out:
            for chunk in ds.chunks():
                refusal = backend.refuse_reason(chunk)
                if refusal:
                    raise UserError(f"backend '{backend.name}' refuses dataset '{ds.name}': "
                                    f"{refusal}")
                values = backend.run(chunk).log10
                if len(values) != chunk.n_pairs:
                    raise RuntimeError(f"backend returned {len(values)} values for "
                                       f"{chunk.n_pairs} pairs")
                out.writelines(fmt % v for v in values)
                n += len(values)
        return n


WORKLOAD = PairHMM()
