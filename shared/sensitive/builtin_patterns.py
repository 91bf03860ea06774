"""The built-in patterns and the scan that runs them; see :mod:`shared.sensitive`.

PEM keys, JWTs, provider keys, AWS, credentials stated in words, emails, phones, SSNs, cards,
IBANs.

Every pattern is linear-time: runs are anchored by look-behinds, repetition is bounded or
possessive, and numeric candidates are validated in Python (Luhn, mod-97, digit counts).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from shared.sensitive.finding import Finding
from shared.sensitive.validators import card_ok, iban_valid, phone_ok

__all__ = ["NOT_A_VALUE", "scan_builtin"]

# Secrets with distinctive prefixes: one combined pass, no validation needed. The kind is the
# name of the alternative that matched (``lastgroup``).
_TOKEN_RE = re.compile(
    r"(?P<private_key>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*))"
    r"|(?P<jwt>(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+)"
    r"|(?P<api_key>(?<![A-Za-z0-9_-])(?:"
    r"sk-ant-[A-Za-z0-9_-]{20,}+"
    r"|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}+"
    r"|gh[pousr]_[A-Za-z0-9]{36,}+"
    r"|github_pat_[A-Za-z0-9_]{22,}+"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}+"
    r"|AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"
    r"))"
    r"|(?P<aws_key>(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)"
    r"[A-Z0-9]{16}(?![A-Za-z0-9]))",
    re.DOTALL,
)

#: Literals one of which every match of :data:`_TOKEN_RE` contains (its alternatives' case-sensitive
#: prefixes): text holding none of them is not scanned with it.
_TOKEN_HINTS = (
    "-----BEGIN",
    "eyJ",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "AIza",
    "AKIA",
    "ASIA",
    "AGPA",
    "AIDA",
    "AROA",
    "AIPA",
    "ANPA",
    "ANVA",
    "ABIA",
    "ACCA",
)

# ``aws_secret_access_key = "…40 chars…"``: only the value is the finding.
_AWS_SECRET_RE = re.compile(
    r"(?i:aws_?secret(?:_?access)?_?key)[\"']?\s{0,5}[:=]\s{0,5}[\"']?"
    r"(?P<v>[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=]))"
)

# A credential stated in words: "my password is hunter2", "PIN: 4411", "passcode = x9!". Only
# the value (one whitespace-free run) is the finding.
_CREDENTIAL_RE = re.compile(
    r"(?i:\b(?:password|passwd|passphrase|passcode|pass\s?code|pin(?:\s?code)?|pwd|"
    r"secret\s?(?:key|code)|security\s?code|access\s?code|locker\s?code|door\s?code))"
    r"(?:\s{1,3}(?i:is|was|=|:)|\s{0,3}[:=])\s{0,3}[\"'`]?(?P<v>[^\s\"'`]{2,128})"
)
_CREDENTIAL_HINT_RE = re.compile(r"(?i)pass|pin|pwd|secret|code")
#: Words after "password is" that say something of it rather than being it ("My password is
#: too weak", "The password is in the drawer"): never a credential's value.
NOT_A_VALUE = frozenset(
    [
        *("too", "in", "on", "at", "the", "a", "an", "my", "not", "very", "so", "still"),
        *("same", "also", "probably", "written", "saved", "stored", "somewhere", "here"),
        *("there", "weak", "strong", "long", "short", "slow", "fast", "easy", "hard"),
        *("simple", "secure", "wrong", "correct", "expired", "changed", "new", "old"),
        "different",
    ]
)
#: The first letters of every keyword of :data:`_CREDENTIAL_RE`: lower-case ASCII text holding
#: none of them is not scanned with it (other text is pre-checked by the case-folding regex).
_CREDENTIAL_HINTS = ("pass", "pin", "pwd", "secret", "security", "access", "locker", "door")

_EMAIL_RE = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}+@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)

_PHONE_RE = re.compile(
    r"(?<![\w+])(?:"
    r"\+\d[\d ().-]{6,22}\d"  # international; 8..15 digits checked in _phone_ok
    r"|(?:1[ .-]?)?\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}"  # (415) 555-0100
    r"|(?:1[ .-])?\d{3}([.-]|[ ])\d{3}\1\d{4}"  # 415-555-0100, 415.555.0100, 415 555 0100
    r")(?![\w])"
)

_SSN_RE = re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w-])")

_CARD_RE = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])")

_IBAN_RE = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?"
)

_HAS_DIGIT_RE = re.compile(r"\d")
#: What every alternative of :data:`_PHONE_RE` contains: ``+`` and a digit, ``(ddd)``, or
#: ``ddd`` and a separator before three more digits.
_PHONE_HINT_RE = re.compile(r"\+\d|\(\d{3}\)|\d{3}[ .-]\d{3}")


_IBAN_PREFIX = 4  # country code + check digits: a cut there leaves no account number


def _iban_span(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Longest valid IBAN prefix of a candidate match (drops trailing groups that are words)."""
    start, end = m.span()
    cand = text[start:end]
    while True:
        if iban_valid(cand) and not (end < len(text) and text[end].isalnum()):
            return start, end
        cut = cand.rfind(" ")
        if cut <= _IBAN_PREFIX:
            return None
        cand = cand[:cut]
        end = start + cut


_Validator = Callable[[str], bool]
#: (kind, regex, validator, the fewest digits a finding holds: a text with fewer is not scanned).
#: Cards 13 (:data:`_CARD_RE`), SSNs 9, phones 8 (``phone_ok``: E.164 8..15, NANP 10..11).
_NUMERIC: tuple[tuple[str, re.Pattern[str], _Validator | None, int], ...] = (
    ("card", _CARD_RE, card_ok, 13),
    ("ssn", _SSN_RE, None, 9),
    ("phone", _PHONE_RE, phone_ok, 8),
)
_DIGITS = "0123456789"


def _scan_labelled(text: str, found: list[Finding]) -> None:
    """AWS secrets after their label, and credentials stated in words."""
    # the label is matched ignoring case; only ASCII text can be pre-checked by its lower case
    # ("ſ" matches "s" under IGNORECASE)
    if ("=" in text or ":" in text) and ("aws" in text.lower() or not text.isascii()):
        for m in _AWS_SECRET_RE.finditer(text):
            found.append(Finding("aws_key", m.start("v"), m.end("v")))
    if text.isascii():
        lowered = text.lower()
        hinted = any(hint in lowered for hint in _CREDENTIAL_HINTS)
    else:
        hinted = _CREDENTIAL_HINT_RE.search(text) is not None
    if hinted:
        for m in _CREDENTIAL_RE.finditer(text):
            value = m.group("v").rstrip(".,;!?)")
            if value and value.lower() not in NOT_A_VALUE:
                found.append(Finding("secret", m.start("v"), m.start("v") + len(value)))


def _scan_numeric(text: str, found: list[Finding]) -> None:
    """Cards, SSNs, phones (validated) and IBANs (longest valid prefix)."""
    if _HAS_DIGIT_RE.search(text) is None:
        return
    # ``\d`` is any decimal digit: counted as ASCII when the text is ASCII, else by the regex
    digits = sum(map(text.count, _DIGITS)) if text.isascii() else len(_HAS_DIGIT_RE.findall(text))
    for kind, regex, ok, fewest in _NUMERIC:
        if digits < fewest or (kind == "phone" and _PHONE_HINT_RE.search(text) is None):
            continue
        for m in regex.finditer(text):
            if ok is None or ok(m.group()):
                found.append(Finding(kind, m.start(), m.end()))
    for m in _IBAN_RE.finditer(text):
        span = _iban_span(text, m)
        if span is not None:
            found.append(Finding("iban", span[0], span[1]))


def scan_builtin(text: str, found: list[Finding]) -> None:
    """Append every built-in finding in ``text`` to ``found`` (unsorted, may overlap)."""
    if any(hint in text for hint in _TOKEN_HINTS):
        for m in _TOKEN_RE.finditer(text):
            found.append(Finding(m.lastgroup or "secret", m.start(), m.end()))
    _scan_labelled(text, found)
    if "@" in text:
        for m in _EMAIL_RE.finditer(text):
            found.append(Finding("email", m.start(), m.end()))
    _scan_numeric(text, found)
