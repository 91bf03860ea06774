"""Control characters in user text: replaced before anything is stored (turns, API writes)."""

from __future__ import annotations

import re

# Unicode category Cc is exactly U+0000-U+001F, U+007F and U+0080-U+009F (Unicode 15, stable by
# policy); \n (U+000A) and \t (U+0009) are kept. One compiled class keeps this O(n) in C: a
# 4 MB turn takes milliseconds (a per-character Python loop took seconds).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # all of Cc, \n and \t included


def strip_control_chars(text: str) -> str:
    r"""``text`` with control characters other than ``\n``/``\t`` replaced by a space.

    Control characters are the Unicode category ``Cc``; a space keeps the words they separated
    apart.

    ``Cc`` is exactly C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F); ``"\r\n"``
    becomes ``"\n"`` first (``"Nul\x00Bob"`` → ``"Nul Bob"``, ``"\x00 I prefer nulls\x00"``
    → ``"  I prefer nulls "``). Format characters (``Cf``: ZWJ, ZWNJ, bidi marks, soft hyphen)
    are kept: emoji sequences and Arabic/Persian/Indic text need them, and the injected block
    drops them anyway (:func:`shared.injection.sanitize_memory_text`). Pure; never raises.
    """
    return _CONTROLS.sub(" ", text.replace("\r\n", "\n"))


def control_chars_as_spaces(text: str) -> str:
    r"""``text`` with the control characters :func:`strip_control_chars` replaces as spaces.

    Same length as ``text`` (``"\r\n"`` is not folded), so offsets into ``text`` stay valid: a
    reader can match on this copy and still look at what was written. Pure; never raises.
    """
    return _CONTROLS.sub(" ", text)


def has_control_char(text: str) -> bool:
    r"""Whether ``text`` holds a control character (Unicode ``Cc``, ``\n`` and ``\t`` included).

    What a name or an id must not hold (a key name, an end-user id): it would split a
    tab-separated listing line or look like another id in logs. Pure; never raises.
    """
    return not text.isprintable() and _ANY_CONTROL.search(text) is not None
