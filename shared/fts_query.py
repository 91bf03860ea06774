"""Keyword-query building for the FTS5 tier: what the store indexes and what it passes to MATCH.

The FTS5 table uses the tokenizer ``porter unicode61 remove_diacritics 2`` (see docs). Two facts
about that tokenizer drive this module:

* ``unicode61`` splits on anything that is not a letter, digit or private-use character, so Latin,
  Cyrillic, Greek, accented text (``café`` → ``cafe``) and space-separated scripts work as they are.
* It has no dictionary, so a run of Han / Kana / Hangul / Thai characters with no spaces becomes
  ONE token (``我喜欢喝绿茶`` is a single term and ``绿茶`` would never match it). Thai vowel and
  tone marks are even treated as separators, cutting Thai words at arbitrary points.

The fix is the one Lucene's ``CJKAnalyzer`` uses (``CJKBigramFilter``: overlapping character
bigrams, a single character for a 1-character run; see
https://lucene.apache.org/core/9_0_0/analysis/common/org/apache/lucene/analysis/cjk/CJKBigramFilter.html):
:func:`index_text` appends the bigrams of every such run to the text written into the FTS column,
and :func:`build_match_query` turns the same runs in the query into the same bigrams, so ``绿茶``
finds ``我喜欢喝绿茶`` and ``緑茶`` finds ``私は緑茶が好きです``. Han, Hiragana, Katakana and Hangul
form one run class (as in Lucene, bigrams cross script boundaries inside a run); Thai is its own
class and its combining marks (category ``Mn``) are dropped before bigramming so that ``unicode61``
sees each bigram as one token. Limitation (same as Lucene without unigrams): a 1-character CJK
query term only matches a 1-character run in the indexed text.

Query safety (see docs): raw user text never reaches MATCH. Every term consists only of
letters, digits, marks and private-use characters, and is additionally wrapped in double quotes
(``"`` doubled), so FTS5 operators typed by users (``AND``, ``NEAR(``, ``*``, ``^``, ``col:``,
``-``, ``+``) are plain text. A quoted string that tokenises to nothing is a valid FTS5 phrase that
matches no row, never a syntax error.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

from shared.invisible_joiners import joined_words

__all__ = [
    "DEFAULT_MAX_TERMS",
    "STOP_WORDS",
    "build_match_query",
    "cjk_bigrams",
    "index_text",
    "query_terms",
    "quote_term",
]

DEFAULT_MAX_TERMS = 32
"""Default cap on the number of OR-ed terms in one MATCH expression (keeps long pastes cheap)."""
ASCII_END = 0x80
"""First code point past ASCII (U+0080)."""

# English stop words. Based on the classic SMART / Lucene English stop lists, extended with the
# question words, auxiliaries, pronouns and contraction remnants that dominate chat questions
# ("which database do we use?"). FTS5 keywords: "and", "or", "not" are stop words here (they carry
# no topic); "near" is NOT a stop word because it is a content word ("cafes near the office") and
# it is harmless once quoted.
_STOP_WORDS_TEXT = """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each either else ever every few for from further get gets got had hadn has hasn have
    haven having he her here hers herself him himself his how however i if in into is isn it its
    itself just let ll me might more most must mustn my myself no nor not now of off on once only or
    other ought our ours ourselves out over own please re same shall shan she should shouldn so
    some such than that the their theirs them themselves then there these they this those through
    to too under until up upon us ve very was wasn we were weren what whats when where whether which
    while who whom whose why will with won would wouldn yes yet you your yours yourself yourselves
    tell know remember recall think anything something thing things
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())
"""Lower-case English stop words dropped from queries (not from the index: bm25 handles that)."""

# --- character classes -------------------------------------------------------------------------

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals supplement, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),  # 〸〹〺〻〼
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana (incl. ー)
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xD7B0, 0xD7FF),  # Hangul Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0xFFA0, 0xFFDC),  # half-width Hangul
    (0x1B000, 0x1B16F),  # Kana supplement / extended
    (0x20000, 0x2FA1F),  # CJK Extensions B-F, compatibility supplement
    (0x30000, 0x323AF),  # CJK Extensions G-H
)
_THAI_RANGE = (0x0E00, 0x0E7F)

_NONE, _WORD, _CJK, _THAI = 0, 1, 2, 3


def _char_class(ch: str) -> int:
    cp = ord(ch)
    for lo, hi in _CJK_RANGES:
        if lo <= cp <= hi:
            return _CJK if _is_token_category(ch) else _NONE
    if _THAI_RANGE[0] <= cp <= _THAI_RANGE[1]:
        return _THAI if _is_token_category(ch) else _NONE
    return _WORD if _is_token_category(ch) else _NONE


def _is_token_category(ch: str) -> bool:
    cat = unicodedata.category(ch)
    # unicode61 token characters are L*, N* and Co; marks are kept attached so that decomposed
    # accents ("e" + U+0301) stay inside their word (unicode61 removes them itself). Code points
    # unassigned in Python's Unicode tables (Cn) may be letters in SQLite's newer tables: keeping
    # them inside the term is safe either way, because FTS5 re-tokenises the quoted string.
    return cat[0] in "LNM" or cat in ("Co", "Cn")


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def _runs(text: str) -> Iterator[tuple[int, str]]:
    """Yield maximal ``(class, run)`` pairs of token characters, classes _WORD/_CJK/_THAI."""
    if text.isascii():  # fast path: in ASCII only letters and digits are token characters
        for match in _ASCII_WORD.finditer(text):
            yield _WORD, match.group()
        return
    cur_cls = _NONE
    start = 0
    for i, ch in enumerate(text):
        cls = _char_class(ch)
        # A combining mark continues whatever run it follows (e.g. a Thai tone mark).
        if cls != _NONE and unicodedata.category(ch)[0] == "M" and cur_cls != _NONE:
            cls = cur_cls
        if cls != cur_cls:
            if cur_cls != _NONE:
                yield cur_cls, text[start:i]
            cur_cls, start = cls, i
    if cur_cls != _NONE:
        yield cur_cls, text[start:]


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of one CJK/Thai run (Lucene ``CJKBigramFilter`` rule).

    ``"我喜欢"`` → ``["我喜", "喜欢"]``; a 1-character run yields itself; empty → ``[]``.
    Combining marks (``Mn``/``Mc``/``Me``) are removed first, since ``unicode61`` would treat Thai
    marks as separators and split a bigram in two.
    """
    chars = [c for c in run if unicodedata.category(c)[0] != "M"]
    if len(chars) <= 1:
        return ["".join(chars)] if chars else []
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


# --- index side --------------------------------------------------------------------------------


def _segmented_tokens(text: str) -> Iterator[tuple[int, str]]:
    """Tokens with CJK/Thai runs already bigrammed: ``(class, token)``."""
    for cls, run in _runs(text):
        if cls == _WORD:
            yield cls, run
        else:
            for bigram in cjk_bigrams(run):
                yield cls, bigram


def index_text(content: str, key: str | None) -> str:
    r"""Text to write into the FTS5 column for one memory.

    Shape: ``content`` (verbatim) + ``"\n"`` + ``key`` (if any) + ``"\n"`` + a segmentation
    suffix. The suffix holds, space separated, the bigrams of every Han/Kana/Hangul/Thai run in
    content and key (see module docstring) and, for "mixed" unicode61 tokens such as
    ``用Python写代码`` or ``00🙁`` (one token each to unicode61, whose Unicode tables treat newer
    symbols as letters), their word pieces (``Python``, ``00``), so every piece can be found.
    A word cut by an invisible format character
    (:data:`shared.invisible_joiners.INVISIBLE_JOINERS`: a soft hyphen or a zero width space
    pasted from a web page or PDF) is added whole too (``Ber\u00adlin`` → ``Berlin``), so the
    word typed without it finds the memory. A word that NFC normalisation changes (queries are
    NFC) is added in its NFC form. Pure-Latin/Cyrillic text in NFC adds
    nothing. The suffix is deterministic, so re-indexing the same memory yields the same text.
    Never raises.
    """
    parts = [content]
    if key:
        parts.append(key)
    extra: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> None:
        for _, tok in _segmented_tokens(text):
            if tok and tok not in seen:
                seen.add(tok)
                extra.append(tok)

    for part in parts:
        source = unicodedata.normalize("NFC", part)
        changed = source != part
        # A unicode61 token is a maximal run of token characters of ANY class; only tokens that
        # contain a CJK/Thai run need help.
        for chunk in _unicode61_chunks(source):
            runs = list(_runs(chunk))
            glued = sum(len(run) for _, run in runs) < len(chunk)
            if glued or any(cls != _WORD for cls, _ in runs):
                add(chunk)  # else unicode61 indexes this chunk exactly as queries split it
            elif changed and chunk not in part:
                # a character NFC rewrites (the precomposed Devanagari "क़" U+0958 or Tibetan
                # U+0F57, composition exclusions): queries are NFC, so the word is also indexed
                # in NFC form, or the word typed the same way would not find it
                add(chunk)
        # a word cut by an invisible character is also indexed whole (its pieces stay)
        for word in joined_words(source):
            add(word)
    out = "\n".join(parts)
    if extra:
        out += "\n" + " ".join(extra)
    return out


# Old, well-known punctuation blocks that unicode61 (whose Unicode tables predate many newer
# symbols) certainly treats as separators: Latin-1, General Punctuation, CJK Symbols and
# Punctuation, Half/Full-width forms.
_KNOWN_SEPARATOR_BLOCKS: tuple[tuple[int, int], ...] = (
    (0x00A0, 0x00FF),
    (0x2000, 0x206F),
    (0x3000, 0x303F),
    (0xFF00, 0xFFEF),
)


def _maybe_glued(ch: str) -> bool:
    """A non-token character that SQLite's unicode61 may nevertheless treat as a token character.

    unicode61's tables are older than Python's: code points assigned later (most emoji, many
    symbols, some punctuation and format characters) count as token characters there, so
    ``00🙁`` is ONE unicode61 token. Such characters are non-ASCII, not letters/digits/marks, and
    outside the old punctuation blocks (format characters ``Cf`` are always suspect).
    """
    cp = ord(ch)
    if cp < ASCII_END or ch.isspace() or _is_token_category(ch):
        return False
    if unicodedata.category(ch) == "Cf":
        return True
    return not any(lo <= cp <= hi for lo, hi in _KNOWN_SEPARATOR_BLOCKS)


def _unicode61_chunks(text: str) -> Iterator[str]:
    """Maximal runs that unicode61 may keep together: token characters plus maybe-glued symbols."""
    start = -1
    for i, ch in enumerate(text):
        if _char_class(ch) != _NONE or _maybe_glued(ch):
            if start < 0:
                start = i
        elif start >= 0:
            yield text[start:i]
            start = -1
    if start >= 0:
        yield text[start:]


# --- query side --------------------------------------------------------------------------------


def _fold_case(token: str) -> str:
    """Lower-case ``token`` the way unicode61 would.

    A character is lower-cased only when both it and its lower-case form already existed in
    Unicode 3.2 (``unicodedata.ucd_3_2_0``), i.e. long before the Unicode tables compiled into
    SQLite's unicode61. Newer case pairs (Cherokee small letters, Greek yot, Georgian Mtavruli)
    are left as typed: unicode61 does not fold them, so lower-casing them here would make the
    query miss the indexed word.
    """
    if token.isascii():  # fast path: ASCII case pairs are as old as Unicode itself
        return token.lower()
    old_ucd = unicodedata.ucd_3_2_0
    out: list[str] = []
    for ch in token:
        low = ch.lower()
        if low != ch and all(old_ucd.category(c) != "Cn" for c in ch + low):
            out.append(low)
        else:
            out.append(ch)
    return "".join(out)


def query_terms(text: str, max_terms: int = DEFAULT_MAX_TERMS) -> list[str]:
    """Search terms of a user query, before quoting.

    Rules, in order: NFC-normalise; split into maximal runs of letters/digits/marks (so
    ``what's`` → ``what``, ``s``; ``C++`` → ``c``; ``snake_case`` → ``snake``, ``case``);
    lower-case (only case pairs unicode61 also folds, see :func:`_fold_case`); CJK/Thai runs →
    :func:`cjk_bigrams`; drop :data:`STOP_WORDS` and 1-character non-CJK tokens; dedupe
    preserving first occurrence; keep at most ``max_terms`` (``max_terms`` ≤ 0 → ``[]``).
    Returns ``[]`` when nothing is left. Never raises for any ``str``. Texts of at most
    :data:`MEMO_CHARS` characters are memoised (the request path asks for the same query's terms
    several times: the recall check, the keyword search, the echo and question rules).
    """
    if len(text) <= MEMO_CHARS:
        if max_terms <= 0:
            return []
        return list(_memo_terms(text)[:max_terms])
    return _terms(text, max_terms)


#: Longest text whose terms :func:`query_terms` memoises (a few hundred of them: a few MB).
MEMO_CHARS = 4096


@functools.lru_cache(maxsize=256)
def _memo_terms(text: str) -> tuple[str, ...]:
    """Every term of ``text`` (at most :data:`MEMO_CHARS` characters, so that many terms).

    Callers asking with different ``max_terms`` share one analysis: the terms under a smaller cap
    are a prefix of these.
    """
    return tuple(_terms(text, MEMO_CHARS))


def _terms(text: str, max_terms: int) -> list[str]:
    if max_terms <= 0:
        return []
    if text.isascii():
        return _ascii_terms(text, max_terms)
    return _unicode_terms(text, max_terms)


def _ascii_terms(text: str, max_terms: int) -> list[str]:
    """:func:`_unicode_terms` of an ASCII ``text``, in one regex pass.

    (NFC and unicode61's case folding leave ASCII as :meth:`str.lower` does, and every token is
    a :data:`_WORD` of letters and digits.)
    """
    terms: list[str] = []
    seen: set[str] = set()
    for term in _ASCII_WORD.findall(text.lower()):
        if len(term) <= 1 or term in STOP_WORDS or term in seen:
            continue
        seen.add(term)
        terms.append(term)
        if len(terms) >= max_terms:
            break
    return terms


def _unicode_terms(text: str, max_terms: int) -> list[str]:
    terms: list[str] = []
    seen: set[str] = set()
    for cls, tok in _query_tokens(unicodedata.normalize("NFC", text)):
        term = _fold_case(tok)
        if cls == _WORD:
            if term.isascii():
                letters = len(term)
            else:
                letters = sum(1 for c in term if unicodedata.category(c)[0] != "M")
            if letters <= 1 or term in STOP_WORDS:
                continue
        if not term or term in seen:
            continue
        seen.add(term)
        terms.append(term)
        if len(terms) >= max_terms:
            break
    return terms


def _query_tokens(text: str) -> Iterator[tuple[int, str]]:
    """:func:`_segmented_tokens` of a query, a word cut by an invisible character first whole.

    ``Ber\u00adlin`` → ``Berlin`` (what :func:`index_text` adds for such a word, and the word as
    typed without it), then ``Ber`` and ``lin`` (what memories stored before that hold).
    """
    for word in joined_words(text):
        yield from _segmented_tokens(word)
    yield from _segmented_tokens(text)


def quote_term(term: str) -> str:
    """FTS5 string literal for ``term``: wrapped in ``"``, inner ``"`` doubled (FTS5 docs §3.1)."""
    return '"' + term.replace('"', '""') + '"'


def build_match_query(text: str, max_terms: int = DEFAULT_MAX_TERMS) -> str | None:
    """Safe FTS5 MATCH expression for arbitrary user text; ``None`` when there is nothing to search.

    Shape: ``"term1" OR "term2" OR ...`` built from :func:`query_terms` (≤ ``max_terms`` terms).
    ``None`` means "skip keyword recall" (e.g. ``*``, ``AND OR NOT``, ``what's my``, emoji only).
    The result is always a syntactically valid FTS5 query; rank with ``bm25()``. Never raises.
    """
    terms = query_terms(text, max_terms)
    if not terms:
        return None
    return " OR ".join(quote_term(t) for t in terms)
