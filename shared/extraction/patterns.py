"""Patterns and text preparation of the regex fact extractor (:mod:`shared.extraction.regex`).

Limits, the do-not-remember check, blanking of pasted or quoted material, sentence and clause
splitting, and the question / hypothetical / hedge / negation patterns that decide which clauses
the rules see.
"""

from __future__ import annotations

import re

#: Longest object kept (characters); longer objects are cut at a word boundary.
MAX_OBJECT_CHARS = 200
#: Only the first this-many characters of a message are examined (pastes beyond are not facts).
MAX_INPUT_CHARS = 20_000
#: A quoted span of this many words or more is a clause someone said, not a name: blanked.
CLAUSE_MIN_WORDS = 3
#: Most words a person or place name is taken to have ("Mary Ann de la Cruz" stops at four).
MAX_NAME_TOKENS = 4
#: Most words of a job title ("senior backend engineer at a bank" is cut before "at").
MAX_OBJECT_WORDS = 5

IGNORE_CASE = re.IGNORECASE
WS_RE = re.compile(r"\s+")


def word_set(text: str) -> frozenset[str]:
    """Set of the whitespace-separated words of a literal word list."""
    return frozenset(text.split())


APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})

# ---- do-not-remember --------------------------------------------------------------------------

_VERBS_DNR = r"(?:remember|save|store|memori[sz]e|record|keep|log|persist)"
_DNR_RE = re.compile(
    # imperative at the start of a clause: "Don't remember this", "please do not save"
    r"(?:^|[.!?;:,\n(\[\"]\s*|\b(?:please|pls|plz|and|but|just|so|ok|okay)\s+)"
    r"(?:do\s+not|don't|dont|never)\s+(?:ever\s+)?" + _VERBS_DNR + r"\b"
    # "... don't save this", not "I don't remember it"
    r"|(?<![Ii] )(?<![Ww]e )(?<![Yy]ou )(?:do\s+not|don't|dont)\s+(?:ever\s+)?"
    r"(?:remember|save|store|memori[sz]e|record)\s+(?:this|that|it|any\s+of\s+(?:this|that|it)"
    r"|anything)\b"
    r"|\b(?:don't|do\s+not|dont)\s+want\s+(?:you\s+)?to\s+(?:remember|save|store|memori[sz]e|record)"
    r"\b"
    r"|\bforget\s+(?:this|that|it|about\s+(?:this|that|it)|(?:what|everything)\s+I\s+(?:just\s+)?"
    r"(?:said|told\s+you|wrote))\b"
    r"|\boff[\s-]the[\s-]record\b"
    r"|\b(?:do\s+not|don't|dont)\s+(?:add|put)\s+(?:this|that|it)\s+(?:to|in|into)\s+"
    r"(?:your\s+)?memory\b",
    IGNORE_CASE,
)


def is_do_not_remember(text: str) -> bool:
    """True if the message asks not to be remembered (nothing of it may be stored or captured).

    Recognises "don't remember this", "do not remember", "don't save/store/record this",
    "please don't save", "I don't want you to remember", "forget this/that/what I said",
    "off the record", "don't add this to your memory" (either apostrophe). "I don't remember the
    command" does not count. Pure; never raises.

    Every phrase holds one of :data:`_DNR_WORDS`, so text holding none is answered without the
    pattern (a scan of the whole text at every position: ~40 µs for a 150-character turn,
    run for each learned turn).
    """
    prepared = text.translate(APOSTROPHES)
    lowered = prepared.lower()
    if not any(word in lowered for word in _DNR_WORDS):
        return False
    return _DNR_RE.search(prepared) is not None


_DNR_WORDS = ("not", "dont", "don't", "never", "forget", "record")
"""Substrings of which every do-not-remember phrase holds one (lower case, after the apostrophe
fold): ``do not``, ``don't``, ``dont``, ``never``, ``forget …``, ``off the record``. None holds a
letter whose case folding differs from ``str.lower`` (such as the Kelvin sign for ``k``), so the
case-insensitive pattern matches nothing the substring test misses."""


# ---- preparation ------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
_BLOCKQUOTE_RE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_QUOTE_RE = re.compile(
    r"\"[^\"\n]{1,2000}\"|“[^”\n]{1,2000}”|«[^»\n]{1,2000}»|「[^」]{1,2000}」|『[^』]{1,2000}』"
)
_FIRST_PERSON_RE = re.compile(r"\b(?:I|me|my|mine|we|our)\b", IGNORE_CASE)
_QUOTE_MARKER_RE = re.compile(
    r"\b(?:says?|said|wrote|writes|reads|replied|answered|told\s+me|outputs?|printed|prints|"
    r"shows|returned|returns|error|exception|traceback|warning|stderr|stdout|logs?)\s*:",
    IGNORE_CASE,
)


def _blank_text(text: str) -> str:
    """Same-length blank keeping newlines, so offsets stay aligned with the original."""
    return "".join("\n" if ch == "\n" else " " for ch in text)


def _blank(match: re.Match[str]) -> str:
    return _blank_text(match.group())


def _blank_quote(match: re.Match[str]) -> str:
    inner = match.group()[1:-1]
    if len(inner.split()) >= CLAUSE_MIN_WORDS or _FIRST_PERSON_RE.search(inner):
        return " " * len(match.group())
    return match.group()


def prepare(text: str) -> str:
    """Blank out pasted/quoted material (same length as ``text``); normalise apostrophes."""
    out = text.translate(APOSTROPHES)
    if "```" in out or "~~~" in out:
        out = _FENCE_RE.sub(_blank, out)
    if "`" in out:
        out = _INLINE_CODE_RE.sub(_blank, out)
    if ">" in out:
        out = _BLOCKQUOTE_RE.sub(_blank, out)
    out = _QUOTE_RE.sub(_blank_quote, out)
    m = _QUOTE_MARKER_RE.search(out)
    if m is not None:
        out = out[: m.start()] + _blank_text(out[m.start() :])
    return out


# ---- sentences and clauses --------------------------------------------------------------------

_BOUNDARY_RE = re.compile(r"[.!?]+(?=[\s\"')\]]*(?:\s|$))[\"')\]]*|[。！？]+|\n")
_ABBREVIATIONS = word_set(
    "e.g i.e etc vs mr mrs ms dr prof st jr sr approx no cf fig inc ltd co al viz resp"
)
INTERROGATIVE_RE = re.compile(
    r"^\W*(?:what|what's|whats|how|how's|why|when|where|who|whom|whose|which|should|shall|can|"
    r"could|would|will|do|does|did|is|are|am|was|were|have|has|had|may|might|must|isn't|aren't|"
    r"doesn't|didn't|shouldn't|wouldn't|can't|won't|any\s+idea|anyone)\b",
    IGNORE_CASE,
)
QUESTION_END_RE = re.compile(r"[?？][\s\"')\]]*$")
HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|assuming|whether|in\s+case|even\s+if|what\s+if)"
    r"\s+(?:I|we|I'm|I'd|my)\b|\bhypothetically\b|\bI\s+wish\b|\bwould\s+I\b",
    IGNORE_CASE,
)
AI_SELF_RE = re.compile(
    r"\bas\s+(?:an?\s+)?(?:ai|a\.i\.|ai\s+(?:language\s+model|assistant|model)|"
    r"(?:large\s+)?language\s+model|llm|assistant|chatbot|virtual\s+assistant)\b",
    IGNORE_CASE,
)
_PRONOUN_AHEAD = r"(?=(?:I|I'm|I've|I'll|I'd|Im|my|we|we're|we'll|we've|let's|lets)\b)"
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*[,;:]\s*(?:(?:and|but|so|then|also|because|plus|though|although)\s+)?"
    + _PRONOUN_AHEAD
    + r"|\s+(?:and|but|so|because|while|although|though|whereas|plus|then)\s+"
    r"(?:(?:then|also|now)\s+)?" + _PRONOUN_AHEAD,
    IGNORE_CASE,
)
HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|not\s+sure|unsure|undecided|considering|"
    r"thinking\s+(?:about|of)|wondering|I\s+guess|I\s+suppose|not\s+certain|no\s+idea|"
    r"could|may\s+be|I\s+may|we\s+may|not\s+decided|haven't\s+decided|tempted)\b",
    IGNORE_CASE,
)
NEGATION_RE = re.compile(r"\b(?:not|never|no|neither|nor)\b|n't\b", IGNORE_CASE)


def sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``.

    Boundaries: ``.``/``!``/``?`` before a space or the end, ``。！？``, newlines.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        if m.group().startswith(".") and m.group().rstrip("\"')]") == ".":
            before = text[start : m.start()]
            token = before[before.rfind(" ") + 1 :].lower()
            if token in _ABBREVIATIONS:
                continue
        spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the clauses of ``text[start:end]`` (split at a new subject)."""
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _CLAUSE_SPLIT_RE.finditer(text, start, end):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans
