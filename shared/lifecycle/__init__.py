"""Memory lifecycle decisions: typed decay, sweep, relevance decay, summaries.

The store layer of the same concept is :mod:`shared.store.memories.lifecycle` (its SQL); see
"Lifecycle" in ``docs/ARCHITECTURE.md``.
"""
