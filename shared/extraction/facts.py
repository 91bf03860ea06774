"""The extracted-fact value and its upsert-key scheme, shared by the regex and LLM extractors.

An :class:`ExtractedFact` is what an extractor hands to the learning pipeline (see "Learning" in
``docs/ARCHITECTURE.md``): a third-person statement about the user ("User prefers TypeScript"), its
category, its memory type (which drives decay) and a stable upsert ``key``.

Key scheme (``<prefix>:<slug>`` or a fixed key; all lower-case):

==========================  =================================  ==========  ==========
what                        key                                category    type
==========================  =================================  ==========  ==========
like / prefer / love / fan  ``preference:like:<head>``         preference  semantic
dislike / hate / don't like ``preference:dislike:<head>``      preference  semantic
my favorite X is Y          ``preference:favorite:<x>``        preference  semantic
decision (I'll use X…)      ``decision:<head>``                decision    semantic
habit (always/usually/…)    ``pattern:<adverb>:<head>``        pattern     procedural
tool (I use X)              ``tool:<head>``                    fact        semantic
name                        ``identity:name``                  fact        factual
lives in / based in         ``identity:location``              fact        factual
is from                     ``identity:origin``                fact        factual
job (work as, I'm a …)      ``identity:job``                   fact        factual
employer (work at/for)      ``identity:employer``              fact        factual
pet                         ``pet:<species>[:<name>]``         fact        factual
family                      ``family:<relation>[:<name>]``     fact        factual
currently working on X      ``context:working-on:<head>``      context     episodic
no longer … / … anymore     key of the statement it corrects   correction  (as corrected)
==========================  =================================  ==========  ==========

``<head>`` is the object up to its first preposition/conjunction ("Postgres for this project" →
``postgres``), so restating or refining a fact upserts the same row, and a correction ("I no
longer use Vim") overwrites it; like and dislike of one thing never share a key.

Slugs (:func:`slug`): NFKC, case-folded, accents stripped, runs of characters other than
``a-z 0-9 . + #`` become ``-`` (so ``Next.js``, ``C++``, ``C#`` stay distinct), at most 48
characters. When the text has any non-ASCII character, or the readable part is empty or was
truncated, ``~`` and a 10-hex-digit BLAKE2b hash of the normalised text are appended, so
non-Latin objects get stable, distinct keys (``咖啡和茶`` and ``绿茶饮料`` differ).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

import msgspec

__all__ = [
    "CATEGORIES",
    "CATEGORY_TYPES",
    "MAX_CONTENT_CHARS",
    "TYPES",
    "ExtractedFact",
    "head",
    "key_for_statement",
    "slug",
]

#: Categories an extractor may produce (the memory categories minus ``turn``/``summary``).
CATEGORIES: frozenset[str] = frozenset(
    {"preference", "decision", "pattern", "fact", "correction", "context"}
)
#: Memory types (see "Data model" in ``docs/ARCHITECTURE.md``).
TYPES: frozenset[str] = frozenset({"factual", "episodic", "procedural", "semantic"})
#: Default memory type per category, used when an extractor gives none (see the table above).
CATEGORY_TYPES: dict[str, str] = {
    "preference": "semantic",
    "decision": "semantic",
    "pattern": "procedural",
    "fact": "factual",
    "correction": "semantic",
    "context": "episodic",
}
#: Longest fact content accepted from any extractor (characters).
MAX_CONTENT_CHARS = 500

_SLUG_MAX = 48
_SLUG_DROP = re.compile(r"[^a-z0-9.+#]+")
_WS = re.compile(r"\s+")


class ExtractedFact(msgspec.Struct, frozen=True, kw_only=True):
    """One fact about the user, ready for the learning pipeline.

    Attributes:
        content: third-person statement, 1..:data:`MAX_CONTENT_CHARS` characters
            ("User prefers TypeScript").
        category: one of :data:`CATEGORIES`.
        type: one of :data:`TYPES`.
        key: stable lower-case upsert key (scheme in the module docstring).
        confidence: 0.0..1.0, the extractor's belief that the user stated this about themselves.
        replaces: ``""``, or a prefix of ``key`` ending in ``:`` whose other stored facts this
            one replaces: a corrected name ("Actually my dog is called Max" replaces every
            ``pet:dog:`` fact, such as the ``pet:dog:rex`` of "My dog is called Rex"), where the
            name is part of the key so that two dogs can be remembered.
    """

    content: str
    category: str
    type: str
    key: str
    confidence: float
    replaces: str = ""
    #: keys of stored facts this statement rejects ("I prefer Vim, not Emacs" rejects
    #: ``preference:like:emacs``); each shares the fact's key prefix up to its last ``:``
    rejects: tuple[str, ...] = ()


def _fold(text: str) -> str:
    """NFKC, case-fold, collapse whitespace."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def slug(text: str) -> str:
    """Stable key fragment for ``text`` (rules in the module docstring); never empty.

    >>> slug("Next.js"), slug("C++"), slug("Postgres for this project")
    ('next.js', 'c++', 'postgres-for-this-project')
    """
    norm = _fold(text)
    ascii_text = unicodedata.normalize("NFKD", norm).encode("ascii", "ignore").decode("ascii")
    readable = _SLUG_DROP.sub("-", ascii_text).strip("-.")
    needs_hash = not readable or not norm.isascii() or len(readable) > _SLUG_MAX
    if len(readable) > _SLUG_MAX:
        readable = readable[:_SLUG_MAX].rstrip("-.")
    if not needs_hash:
        return readable
    digest = hashlib.blake2b(norm.encode("utf-8"), digest_size=5).hexdigest()
    return f"{readable}~{digest}" if readable else f"~{digest}"


# Third-person statements → the key the regex extractor would give the same fact, so facts from
# the LLM extractor upsert onto regex-extracted ones. Checked in order; first match wins.
_USER = r"^(?:the )?user(?:'s|’s)?\s+"
_STATEMENT_KEYS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), k)
    for p, k in (
        (
            _USER + r"(?:dislikes|hates|detests|loathes|can't stand|cannot stand|"
            r"(?:doesn't|does not) (?:like|love|enjoy)|is not a fan of|isn't a fan of) (.+)",
            "preference:dislike:",
        ),
        (
            _USER + r"(?:prefers|likes|loves|enjoys|is a (?:big |huge )?fan of) (.+)",
            "preference:like:",
        ),
        (_USER + r"favou?rite (.+?) (?:is|are) .+", "preference:favorite:"),
        (_USER + r"name is .+", "identity:name"),
        (_USER + r"(?:lives|is based|resides) in .+", "identity:location"),
        (_USER + r"(?:is|comes) from .+", "identity:origin"),
        (_USER + r"works (?:at|for) .+", "identity:employer"),
        (_USER + r"works as .+", "identity:job"),
        (
            _USER + r"(?:decided to use|will use|is going to use|chose|is using|switched to) (.+)",
            "decision:",
        ),
        (
            _USER + r"(is )?(always|usually|never|often|typically|generally|normally|rarely|"
            r"seldom|frequently|regularly|sometimes|tends to) (.+)",
            "pattern:",
        ),
        (_USER + r"(?:uses) (.+)", "tool:"),
        (_USER + r"(?:is working on|works on) (.+)", "context:working-on:"),
    )
)

_USER_PREFIX = re.compile(_USER, re.IGNORECASE)
# "User no longer likes X" keys like "User likes X", so the correction overwrites that row.
_NO_LONGER = re.compile(r"^((?:the )?user) no longer ", re.IGNORECASE)

#: Words that end the "head" of an object (the part that names the thing).
_HEAD_CUT = re.compile(
    r"(?:\s(?:for|in|on|at|with|over|than|because|since|when|while|as|to|from|during|by|via|"
    r"instead|rather|and|but|or|so|if|unless|whenever|every|each|not|now|more|nowadays|"
    r"anymore|these\s+days|lately)\b|\s*[,;(]).*",
    re.IGNORECASE | re.DOTALL,
)


def head(obj: str) -> str:
    """The leading noun phrase of an object: text before the first preposition/conjunction.

    ``"Postgres for this project"`` → ``"Postgres"``; ``"to code at night"`` → ``"to code"``;
    ``"Vim, not Emacs"``, ``"Vim now"``, ``"Rust more than Go"`` → ``"Vim"``, ``"Vim"``,
    ``"Rust"`` (a marker at position 0 does not cut). Returns ``obj`` stripped when nothing cuts it.
    """
    stripped = obj.strip()
    m = _HEAD_CUT.search(stripped, 1)
    cut = stripped[: m.start()] if m else stripped
    return cut.strip() or stripped


_IRREGULAR_BASE = {"is": "be", "has": "have", "does": "do", "goes": "go"}


def _base_verb(verb: str) -> str:
    """Base form of a third-person singular verb ("commits" → "commit", "pushes" → "push")."""
    lower = verb.lower()
    if lower in _IRREGULAR_BASE:
        return _IRREGULAR_BASE[lower]
    if lower.endswith("ies") and len(lower) > len("ies"):
        return verb[:-3] + "y"
    if lower.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    if lower.endswith("s") and not lower.endswith("ss"):
        return verb[:-1]
    return verb


def key_for_statement(category: str, content: str) -> str:
    """Deterministic upsert key for a third-person ``content`` of ``category``.

    Recognises the statement forms the regex extractor produces ("User prefers X", "User's name
    is X", …) and returns the same key; anything else gets ``<category>:<slug(content)>`` with a
    leading "User"/"User's" removed. Never raises; never returns an empty slug.
    """
    text = _NO_LONGER.sub(r"\1 ", content.strip().rstrip(".!。"), count=1)
    for regex, prefix in _STATEMENT_KEYS:
        m = regex.match(text)
        if m is None:
            continue
        groups = [g for g in m.groups() if g]
        if not groups:
            return prefix
        if prefix == "pattern:":
            is_, adv, rest = m.groups()
            adv = "usually" if adv.lower() == "tends to" else adv.lower()
            if not is_ and m.group(2).lower() != "tends to":
                verb, _, tail = rest.partition(" ")
                rest = f"{_base_verb(verb)} {tail}".strip()
            return f"pattern:{adv}:{slug(head(rest))}"
        if prefix == "preference:favorite:":
            return prefix + slug(groups[0])
        return prefix + slug(head(groups[0]))
    body = _USER_PREFIX.sub("", text, count=1) or text
    cat = category if category in CATEGORIES else "fact"
    return f"{cat}:{slug(body)}"


_OPPOSITE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("preference:like:", "preference:dislike:"),
    ("preference:dislike:", "preference:like:"),
)
_POSITIVE_HABITS = ("always", "usually", "often", "typically", "generally", "normally")
_NEGATIVE_HABITS = ("never", "rarely")


def contradicted_keys(key: str) -> list[str]:
    """Keys of the statements a fact with ``key`` contradicts, which it should replace.

    A like and a dislike of the same thing (``preference:like:x`` ↔ ``preference:dislike:x``),
    and a positive and a negative habit about the same thing (``pattern:always:x`` ↔
    ``pattern:never:x``): the newer statement wins. Other keys contradict nothing here (their
    restatements share the key and are simply updated).
    """
    for prefix, opposite in _OPPOSITE_PREFIXES:
        if key.startswith(prefix):
            return [opposite + key[len(prefix) :]]
    if key.startswith("pattern:"):
        adverb, sep, rest = key[len("pattern:") :].partition(":")
        if not sep or not rest:
            return []
        if adverb in _POSITIVE_HABITS:
            return [f"pattern:{a}:{rest}" for a in _NEGATIVE_HABITS]
        if adverb in _NEGATIVE_HABITS:
            return [f"pattern:{a}:{rest}" for a in _POSITIVE_HABITS]
    return []
