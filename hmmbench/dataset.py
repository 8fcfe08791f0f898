"""What the runner needs of a dataset, whatever its workload and source."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

#: A workload's unit of work (a PairSet, a ProfileSearch)
Unit = Any


def joined_unit(pieces: list) -> Unit:
    """Consecutive pieces of a set as one unit (the pieces' own class joins them, in order)."""
    return pieces[0] if len(pieces) == 1 else type(pieces[0]).concatenate(pieces)


@dataclass
class Dataset:
    """A named, reproducible unit of work (the Pair-HMM workload: a set of batches of pairs).

    ``loader`` builds the whole unit (a PairSet (files, small synthetic sets). Sets too large for memory
    (the NA12878-scale chunk generator) give ``chunk_loader`` instead, yielding PairSets lazily;
    ``n_pairs``/``n_cells`` are then known up front from the generator's plan.
    """
    name: str
    kind: str                 # block | gatk | synthetic | chunks
    description: str
    sha256: str               # of the file, or of the generation parameters and seed
    path: Optional[str] = None
    loader: Optional[Callable[[], Unit]] = None
    chunk_loader: Optional[Callable[[], Iterator[Unit]]] = None
    n_pairs: Optional[int] = None
    n_cells: Optional[int] = None
    params: dict = field(default_factory=dict)
    #: Chunking mode that matches how the source runs this set, for when the user names none:
    #: 'merged' for the papers' synthetic sets (one launch of independent pairs); None = runner's.
    default_chunking: Optional[str] = None
    _cache: Optional[Unit] = field(default=None, repr=False)

    def load(self) -> Unit:
        """The whole set as one unit (cached); a lazy set's pieces joined by their own class."""
        if self._cache is None:
            if self.loader is not None:
                self._cache = self.loader()
            else:
                self._cache = joined_unit(list(self.chunk_loader()))
        return self._cache

    def chunks(self) -> Iterator[Unit]:
        """The set in pieces that fit in memory; one piece for everything but generators."""
        if self.chunk_loader is not None and self._cache is None:
            yield from self.chunk_loader()
        else:
            yield self.load()

    @property
    def lazy(self) -> bool:
        return self.loader is None
