"""What the runner needs of a dataset, whatever its source."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from ..model import PairSet


@dataclass
class Dataset:
    """A named, reproducible set of batches.

    ``loader`` builds the whole PairSet (files, small synthetic sets). Sets too large for memory
    (the NA12878-scale chunk generator) give ``chunk_loader`` instead, yielding PairSets lazily;
    ``n_pairs``/``n_cells`` are then known up front from the generator's plan.
    """
    name: str
    kind: str                 # block | gatk | synthetic | chunks
    description: str
    sha256: str               # of the file, or of the generation parameters and seed
    path: Optional[str] = None
    loader: Optional[Callable[[], PairSet]] = None
    chunk_loader: Optional[Callable[[], Iterator[PairSet]]] = None
    n_pairs: Optional[int] = None
    n_cells: Optional[int] = None
    params: dict = field(default_factory=dict)
    #: Chunking mode that matches how the source runs this set, for when the user names none:
    #: 'merged' for the papers' synthetic sets (one launch of independent pairs); None = runner's.
    default_chunking: Optional[str] = None
    _cache: Optional[PairSet] = field(default=None, repr=False)

    def load(self) -> PairSet:
        """The whole set as one PairSet (cached)."""
        if self._cache is None:
            if self.loader is not None:
                self._cache = self.loader()
            else:
                self._cache = PairSet.concatenate(list(self.chunk_loader()))
        return self._cache

    def chunks(self) -> Iterator[PairSet]:
        """The set in pieces that fit in memory; one piece for everything but generators."""
        if self.chunk_loader is not None and self._cache is None:
            yield from self.chunk_loader()
        else:
            yield self.load()

    @property
    def lazy(self) -> bool:
        return self.loader is None
