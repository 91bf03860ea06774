"""One sensitive span found in a text."""

from __future__ import annotations

import msgspec

__all__ = ["Finding"]


class Finding(msgspec.Struct, frozen=True):
    """One sensitive span: ``text[start:end]`` is of ``kind`` (a key of :data:`PLACEHOLDERS`).

    ``0 <= start < end <= len(text)``; offsets are in Python ``str`` code points.
    """

    kind: str
    start: int
    end: int
