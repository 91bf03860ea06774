"""A memory's request-path features, computed once when it is indexed rather than per recall.

:class:`MemoryPreparer` is the :class:`shared.recall_index.prepared.Preparer` of the keyword
cache: the block line (redaction with the configured detector when ``sensitive_filter`` is on,
then :func:`shared.memory_block.memory_line`) and the echo features of :mod:`shared.echo`. Its
``fingerprint`` names the redaction configuration and :data:`RENDER_VERSION`; lines prepared
under another fingerprint are never used (docs/ARCHITECTURE.md, "Recall engine").
"""

from __future__ import annotations

import functools
import hashlib

from shared.echo import asked_terms, normalised_words, question_features
from shared.memory_block import RecalledMemory, memory_line
from shared.models import Memory
from shared.personal_subjects import subjects_of
from shared.recall_index.prepared import Prepared
from shared.sensitive import SensitiveDetector
from shared.time_cues import cue_terms

__all__ = ["RENDER_VERSION", "MemoryPreparer", "preparer_for", "render_line"]

RENDER_VERSION = 5
"""Bump when redaction, sanitising, the line format or the echo analysis changes: prepared
features stored in owner snapshots by older code are then ignored."""


def render_line(
    detector: SensitiveDetector | None, content: str, created_at: float, category: str
) -> str:
    """The block line of a memory: ``content`` redacted by ``detector`` (None: not redacted).

    :func:`shared.memory_block.memory_line` of the redacted content; pure.
    """
    text = content if detector is None else detector.redact(content)
    return memory_line(RecalledMemory(content=text, created_at=created_at, category=category))


class MemoryPreparer:
    """Prepares memories for recall under one redaction configuration (thread-safe, pure).

    ``detector``: the sensitive-content detector, None when ``sensitive_filter`` is off.
    """

    def __init__(self, detector: SensitiveDetector | None) -> None:
        self.detector = detector
        patterns = "off" if detector is None else "\x00".join(detector.custom_patterns)
        digest = hashlib.sha256(f"{RENDER_VERSION}\x01{patterns}".encode()).hexdigest()
        self._fingerprint = digest[:16]

    @property
    def fingerprint(self) -> str:
        """16 hex digits of the redaction configuration and :data:`RENDER_VERSION`."""
        return self._fingerprint

    def __call__(self, memory: Memory, /) -> Prepared:
        """The block line, echo, time-cue and subject features of ``memory`` (CPU only, ~0.1 ms)."""
        content = memory.content
        line = render_line(self.detector, content, memory.created_at, memory.category)
        asked = tuple(sorted(asked_terms(content)))
        questions = question_features(content)
        q_terms, s_terms = (
            (None, ())
            if questions is None
            else (tuple(sorted(questions[0])), tuple(sorted(questions[1])))
        )
        words_len = len(normalised_words(content))
        subjects, others = subjects_of(content)
        return Prepared(
            line, asked, q_terms, s_terms, words_len, cue_terms(content), subjects, others
        )


@functools.lru_cache(maxsize=8)
def preparer_for(sensitive_filter: bool, detector: SensitiveDetector) -> MemoryPreparer:
    """The preparer of a configuration: ``detector`` when ``sensitive_filter``, else none."""
    return MemoryPreparer(detector if sensitive_filter else None)
