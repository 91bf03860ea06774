"""Emails and phone numbers spelled out to dodge filters.

For example ``jane dot doe at example dot com``, ``jane [at] example [dot] org``, ``four one
five five five five zero one zero zero``.

Both scans start from a cheap anchor (the ``at`` token; a digit word) and match around it, so
ordinary prose — where "at" and "one" are everywhere — costs one linear search per anchor kind
and a bounded match at each anchor. Prose that only looks alike ("I work at acme dot com", "look
at the dot com era", "one two three") is not flagged: see the word lists below.
"""

from __future__ import annotations

import re

from shared.sensitive.finding import Finding

__all__ = ["scan_spelled"]

_I = re.IGNORECASE
# ---- emails ------------------------------------------------------------------------------------
#: A plain dot (no spaces around it, as in an address) or a spelled one ("dot", "(dot)", "[dot]").
_DOT = r"(?:\.|\s*[(\[{<]\s*dot\s*[)\]}>]\s*|\s+dot\s+)"
_OPEN, _CLOSE = "([{<", ")]}>"
_TLDS = (
    r"(?:com|org|net|edu|gov|io|co|de|uk|fr|es|it|nl|ch|at|be|se|no|dk|fi|pl|ru|jp|cn|in|br|au|"
    r"ca|us|me|info|biz|dev|app|ai)"
)
#: The domain after the ``at`` token: labels joined by spelled or plain dots, ending in a TLD.
_DOMAIN = re.compile(
    r"[A-Za-z0-9-]{1,63}(?:"
    + _DOT
    + r"[A-Za-z0-9-]{1,63}){0,3}"
    + _DOT
    + _TLDS
    + r"(?![A-Za-z0-9])",
    _I,
)
#: The local part before the ``at`` token (matched at the end of a bounded window).
_LOCAL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9_%+-]{1,64}(?:" + _DOT + r"[A-Za-z0-9_%+-]{1,64}){0,4}\Z", _I
)
_LOCAL_REACH = 64 * 5 + 4 * 12  # longest local part: 5 runs of 64 joined by 4 spelled dots
#: Last word before ``at`` that makes "X at Y dot com" ordinary prose ("I work at acme dot com").
_PROSE_BEFORE_AT = frozenset(
    {
        *("work", "works", "worked", "working", "look", "looking", "looked", "be", "is", "am"),
        *("are", "was", "were", "meet", "me", "us", "him", "her", "them", "it", "stay"),
        *("stayed", "live", "lives", "lived", "living", "arrive", "arrived", "shop", "shopped"),
        *("buy", "bought", "sign", "signed", "apply", "applied", "job", "intern", "interned"),
        *("study", "studied", "stuff", "things", "something", "sites", "site", "found"),
    }
)
#: First word after ``at`` that makes it prose ("look at the dot com era").
_PROSE_DOMAIN = frozenset(
    {"the", "a", "an", "my", "your", "our", "this", "that", "home", "school", "night", "least"}
)


def _at_tokens(text: str, lowered: str) -> list[tuple[int, int]]:
    """Spans ``(end of the local part, start of the domain)`` around each ``at`` token.

    The token is ``at`` between spaces, or ``(at)``/``[at]``/``{at}``/``<at>`` with optional
    spaces around.
    """
    out: list[tuple[int, int]] = []
    i = lowered.find("at", 1)
    n = len(text)
    while 0 < i < n - 2:
        before, after = text[i - 1], text[i + 2]
        if (before.isspace() and after.isspace()) or (
            before in _OPEN and after == _CLOSE[_OPEN.index(before)]
        ):
            out.append((i - 1, i + 3))
        i = lowered.find("at", i + 2)
    return [(_skip_space_back(text, lo), _skip_space(text, hi)) for lo, hi in out]


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _skip_space_back(text: str, i: int) -> int:
    while i > 0 and text[i - 1].isspace():
        i -= 1
    return i


def _spelled_emails(text: str, lowered: str, found: list[Finding]) -> None:
    for local_end, domain_start in _at_tokens(text, lowered):
        domain = _DOMAIN.match(text, domain_start)
        if domain is None:
            continue
        local = _LOCAL.search(text, max(0, local_end - _LOCAL_REACH), local_end)
        if local is None:
            continue
        last_local = re.split(r"\W+", local.group().lower())[-1]
        first_domain = re.split(r"\W+", domain.group().lower())[0]
        if last_local in _PROSE_BEFORE_AT or first_domain in _PROSE_DOMAIN:
            continue
        found.append(Finding("email", local.start(), domain.end()))


# ---- phones ------------------------------------------------------------------------------------
_DIGIT_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|\d{1,4})"
    r"(?![A-Za-z0-9])",
    _I,
)
_GAP = re.compile(r"[\s,.()+-]{1,3}")
_WORD_HINT = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
#: A spelled phone: at least this many digits, at least :data:`_MIN_WORDS` of them as words.
_MIN_DIGITS = 9
_MIN_WORDS = 3


def _close_run(text: str, run: list[re.Match[str]], found: list[Finding]) -> None:
    words = sum(1 for m in run if not m.group()[0].isdigit())
    digits = words + sum(len(m.group()) for m in run if m.group()[0].isdigit())
    if words >= _MIN_WORDS and digits >= _MIN_DIGITS:
        found.append(Finding("phone", run[0].start(), run[-1].end()))


_WORD_DIGIT_SET = frozenset(_WORD_HINT) | {"oh"}
_STRIP = ",.()+-"


def _may_hold_phone(lowered: str) -> bool:
    """Cheap pre-check on whitespace-split words (over-approximates).

    True when some run of digit words and numbers holds at least :data:`_MIN_WORDS` words and
    :data:`_MIN_DIGITS` digits.
    """
    words = digits = 0
    for raw in lowered.split():
        token = raw.strip(_STRIP)
        if token in _WORD_DIGIT_SET:
            words, digits = words + 1, digits + 1
        elif token.isdigit() and token.isascii():
            digits += len(token)
        else:
            words = digits = 0
            continue
        if words >= _MIN_WORDS and digits >= _MIN_DIGITS:
            return True
    return False


def _spelled_phones(text: str, found: list[Finding]) -> None:
    run: list[re.Match[str]] = []
    for m in _DIGIT_TOKEN.finditer(text):
        if run and _GAP.fullmatch(text, run[-1].end(), m.start()) is None:
            _close_run(text, run, found)
            run = []
        run.append(m)
    if run:
        _close_run(text, run, found)


def scan_spelled(text: str, found: list[Finding]) -> None:
    """Append spelled-out emails and phone numbers in ``text`` to ``found``.

    Kinds ``email`` and ``phone``. Never raises.
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two: keep offsets exact
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    _spelled_emails(text, lowered, found)
    if _may_hold_phone(lowered):
        _spelled_phones(text, found)
