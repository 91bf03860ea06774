"""What a correcting statement replaces: the name stored in a slot, or a preference set aside.

Pure helpers of the rule builders (:mod:`shared.extraction.rule_builders`). They mark a fact
with :attr:`~shared.extraction.facts.ExtractedFact.replaces` (the slot's key prefix: its one
other name is deleted when learned) or :attr:`~shared.extraction.facts.ExtractedFact.rejects`
(exact keys to delete); docs/ARCHITECTURE.md, "Learning".
"""

from __future__ import annotations

import re

import msgspec

from shared.extraction.facts import ExtractedFact, head, slug

# What a preference is chosen against: "Vim, not Emacs", "Vim instead of Emacs", "tea rather
# than coffee", "Vim over Emacs" (with "prefer" only).
_REJECTED_RE = re.compile(
    r"(?:,?\s+not|\s+instead\s+of|\s+rather\s+than|(?P<over>\s+over))\s+(?P<other>\w.*)",
    re.IGNORECASE | re.DOTALL,
)
_NOT_NAME_RE = re.compile(r",?\s+not\s+(?P<name>\w[\w'-]*)")


def with_rejected_preference(fact: ExtractedFact, obj: str, verb: str) -> ExtractedFact:
    """``fact`` (a ``preference:like:`` fact of object ``obj``) rejecting what it is chosen over.

    "Vim, not Emacs", "Vim instead of Emacs", "tea rather than coffee" and, when ``verb`` is
    "prefer", "Vim over Emacs" reject ``preference:like:emacs`` / ``...:coffee``; "Rust more
    than Go" and "hiking over the weekend" (not "prefer") reject nothing. Pure.
    """
    rejected = _REJECTED_RE.search(obj)
    if rejected is None or (rejected.group("over") and verb != "prefer"):
        return fact
    other = slug(head(rejected.group("other")))
    key = f"preference:like:{other}"
    if not other or key == fact.key:
        return fact
    return msgspec.structs.replace(fact, rejects=(key,))


def corrected_name(fact: ExtractedFact, clause: str, start: int, slot: str) -> ExtractedFact:
    """``fact`` replacing the name its slot held (``slot``: its key prefix, ``pet:dog:``).

    The name after "not" in ``clause`` from ``start`` on ("Max, not Rex" rejects
    ``<slot>rex``), else the slot's only other name (``replaces``; the store deletes nothing
    when the slot holds two or more). Pure.
    """
    named = _NOT_NAME_RE.search(clause, start)
    if named is not None:
        other = f"{slot}{slug(named.group('name'))}"
        if other != fact.key:
            return msgspec.structs.replace(fact, rejects=(other,))
    return msgspec.structs.replace(fact, replaces=slot)
