"""What a device backend builds on the host for a model (a warp profile's words, a compiled
kernel with its grid and info), kept across searches: a run times one model over and over, and
rebuilding them per search was ~0.2 ms of host time before the GPU started, in a 4.3 ms SSV
search at M = 100 (docs/profile-host-path.md).

Entries are keyed by the models' ids and hold the models themselves, so an id is never taken
for a later model's (an entry whose models are not the caller's is built again); the last
:data:`KEPT` entries are kept.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable

#: entries kept: a search's kinds and kernels for a few models (a model's SSV, MSV and VF
#: profiles and kernels, the pipeline's recompute kernels); a model set searched one model
#: after another rebuilds its entries, as before
KEPT = 32


def model_key(model) -> tuple:
    """The key of a model (or of a batch, a list of models) in a :class:`KeptModels`."""
    return tuple(map(id, model)) if isinstance(model, list) else (id(model),)


class KeptModels:
    """An LRU of host-built launch data by key, each entry tied to its models."""

    def __init__(self, size: int = KEPT):
        self.size = size
        self._entries: OrderedDict = OrderedDict()

    def get(self, key: tuple, model, make: Callable):
        """The value kept under ``key`` for ``model``, else ``make()`` kept for it."""
        models = tuple(model) if isinstance(model, list) else (model,)
        hit = self._entries.get(key)
        if hit is not None and len(hit[0]) == len(models) \
                and all(a is b for a, b in zip(hit[0], models)):
            self._entries.move_to_end(key)
            return hit[1]
        value = make()
        self._entries[key] = (models, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value
