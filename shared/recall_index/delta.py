"""The mutable part of an owner's keyword index: memories written since the segment was built.

Small by construction (the owner is rebuilt once it grows past a threshold, see
:mod:`shared.recall_index.owner`), so plain dicts are fast enough. ``postings[term][id]`` is the
weighted term frequency (own text 1, context ``context_weight``) and ``lengths[id]`` the document
length; the BM25 term-frequency factor is computed at search time
(:meth:`shared.recall_index.owner.OwnerIndex.hits`) with the average length of the segment and
the delta together, so it does not depend on the order memories arrived in, and a young owner
(first indexed with no memories, or a few) is not normalised against a meaningless average.
"""

from __future__ import annotations

import msgspec

from shared.models import Memory
from shared.recall_index.analysis import analyse, analyse_context
from shared.recall_index.prepared import Prepared, prepared_bytes

__all__ = ["Delta"]


class Delta:
    """Memories added or replaced after the segment was built, with their postings."""

    def __init__(self) -> None:
        self.memories: dict[int, Memory] = {}
        self.terms: dict[int, list[str]] = {}
        self.postings: dict[str, dict[int, float]] = {}
        self.lengths: dict[int, float] = {}  # document length (terms, context weighted 1) by id
        self.length = 0.0  # their sum
        #: Prepared features by rowid (filled by the owner index; dropped with the memory).
        self.prepared: dict[int, Prepared] = {}
        self.bytes = 0

    def __len__(self) -> int:
        return len(self.memories)

    def df(self, term: str) -> int:
        """Documents of the delta holding ``term``."""
        hits = self.postings.get(term)
        return len(hits) if hits else 0

    def add(self, memory: Memory, text: str, context: str, context_weight: float) -> None:
        """Index ``memory`` (replacing an earlier version of it).

        Its context's terms count ``context_weight`` each, its own text's 1.
        """
        self.remove(memory.id)
        freq: dict[str, float] = {}
        own = analyse(text)
        ctx = analyse_context(context)
        for t in own:
            freq[t] = freq.get(t, 0.0) + 1.0
        for t in ctx:
            freq[t] = freq.get(t, 0.0) + context_weight
        dl = float(len(own) + len(ctx))
        for t, f in freq.items():
            self.postings.setdefault(t, {})[memory.id] = f
        self.memories[memory.id] = memory
        self.terms[memory.id] = list(freq)
        self.lengths[memory.id] = dl
        self.length += dl
        self.bytes += len(memory.content) + 80 * len(freq) + 460

    def keep_prepared(self, memory_id: int, prepared: Prepared) -> None:
        """Hold the prepared features of a delta memory (dropped when it is removed)."""
        if memory_id in self.memories:
            old = self.prepared.get(memory_id)
            self.bytes += prepared_bytes(prepared) - (0 if old is None else prepared_bytes(old))
            self.prepared[memory_id] = prepared

    def remove(self, memory_id: int) -> bool:
        """Forget ``memory_id``; True when the delta held it."""
        memory = self.memories.pop(memory_id, None)
        if memory is None:
            return False
        terms = self.terms.pop(memory_id)
        self.length -= self.lengths.pop(memory_id)
        prepared = self.prepared.pop(memory_id, None)
        if prepared is not None:
            self.bytes -= prepared_bytes(prepared)
        for t in terms:
            hits = self.postings.get(t)
            if hits is not None:
                hits.pop(memory_id, None)
                if not hits:
                    del self.postings[t]
        self.bytes -= len(memory.content) + 80 * len(terms) + 460
        return True

    def touch(self, memory_id: int, access_count: int, last_accessed_at: float | None) -> None:
        """Record new access counters of a delta memory."""
        memory = self.memories.get(memory_id)
        if memory is not None:
            self.memories[memory_id] = msgspec.structs.replace(
                memory, access_count=access_count, last_accessed_at=last_accessed_at
            )
