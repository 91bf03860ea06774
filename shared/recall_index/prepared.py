"""What the request path needs of a memory besides its record, prepared when it is indexed.

Rendering a recalled memory's block line (redaction, sanitising, date) and analysing its text for
the echo rules (:mod:`shared.echo`) are per-memory Python work. Done on a memory's first recall
they dominated a warm keyword recall (every request recalls memories new to a per-text cache), so
the cache prepares them when it indexes a memory: in slices on the event loop after an owner is
built from its rows (kept in the owner's snapshot, so a cold load from it prepares nothing), and
when a changed memory enters an owner's delta. The computation is injected (a
:class:`Preparer`, built by :mod:`shared.memory_render`), so this package depends on neither
redaction nor the block format. docs/ARCHITECTURE.md, "Recall engine".

A prepared line depends on the redaction configuration: every :class:`Preparer` carries a
``fingerprint`` of it, kept with what it prepared; a reader asking with another fingerprint gets
nothing and renders on the fly, so a configuration change never injects stale text.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from shared.models import Memory

__all__ = ["Prepared", "Preparer", "prepared_bytes"]


class Prepared(msgspec.Struct, frozen=True, array_like=True):
    """One memory's request-path features.

    ``line``: its block line (:func:`shared.memory_block.memory_line` of the redacted content;
    ``""`` when nothing is left after sanitising). ``asked``: the distinct search terms of a text
    that is a question or request (:func:`shared.question_form.is_question_or_request`), else empty.
    ``q_terms``/``s_terms``: the index terms of its question sentences and of its other
    sentences; ``q_terms`` is None when the text can never be asks-only (no ``?``, or too long;
    :func:`shared.echo.asks_only`).
    ``words_len``: the length of its words as the echo rules compare them
    (:func:`shared.echo.normalised_words`); ``cue_terms``: the index terms of a text that states
    a relative time (:func:`shared.time_cues.cue_terms`), else None. Both are prepared together:
    ``words_len`` −1 (a record without them) means the text is analysed instead.
    ``subjects``/``others``: the user's people and pets the text names (``kind:one`` codes) and
    the index terms it says only of them (:func:`shared.personal_subjects.subjects_of`).
    """

    line: str
    asked: tuple[str, ...] = ()
    q_terms: tuple[str, ...] | None = None
    s_terms: tuple[str, ...] = ()
    words_len: int = -1
    cue_terms: tuple[str, ...] | None = None
    subjects: tuple[str, ...] = ()
    others: tuple[str, ...] = ()


class Preparer(Protocol):
    """Computes :class:`Prepared` for a memory (pure, CPU only, thread-safe)."""

    @property
    def fingerprint(self) -> str:
        """Identifies the redaction configuration (and code version) the lines depend on."""
        ...

    def __call__(self, memory: Memory, /) -> Prepared:
        """The features of ``memory``."""
        ...


def prepared_bytes(p: Prepared) -> int:
    """Approximate bytes held by ``p`` (the cache budget's estimate)."""
    terms = len(p.asked) + len(p.s_terms) + (len(p.q_terms) if p.q_terms is not None else 0)
    terms += len(p.cue_terms) if p.cue_terms is not None else 0
    terms += len(p.subjects) + len(p.others)
    return 100 + len(p.line) + 60 * terms
