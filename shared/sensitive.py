"""Sensitive-content detection and redaction (DESIGN §5 "sensitive-content check", CASES.md).

A :class:`SensitiveDetector` finds personal data and secrets in text so the learning pipeline never
stores them verbatim and the injector never replays them. It is built once (all regular
expressions are compiled at construction / import time) and is then a pure, thread-safe value.

Built-in detectors (kind → placeholder used by :meth:`SensitiveDetector.redact`):

============  =================  ===========================================================
kind          placeholder        what
============  =================  ===========================================================
email         ``[email]``        ``local@domain.tld``
phone         ``[phone]``        ``+<8..15 digits>`` (E.164 length, ITU-T E.164 §6) with
                                 spaces/dots/dashes/brackets; US ``(415) 555-0100``,
                                 ``415-555-0100``, ``415 555 0100``, ``1-800-555-0100``
ssn           ``[ssn]``          US SSN ``AAA-GG-SSSS`` (area not 000/666/9xx, group not 00,
                                 serial not 0000: SSA numbering rules)
card          ``[card]``         13..19 digits, spaces/dashes allowed, Luhn-valid (ISO/IEC 7812)
iban          ``[iban]``         ``CCkk`` + 11..30 alphanumerics, mod-97 == 1 (ISO 13616)
jwt           ``[jwt]``          ``eyJ…`` header ``.`` payload ``.`` signature (RFC 7519)
private_key   ``[private_key]``  PEM ``-----BEGIN … PRIVATE KEY-----`` to END or end of text
aws_key       ``[aws_key]``      ``AKIA``/``ASIA``/… + 16 chars; ``aws_secret_access_key=`` value
api_key       ``[api_key]``      OpenAI ``sk-``/``sk-proj-``, Anthropic ``sk-ant-``, GitHub
                                 ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``, Slack ``xox[abprs]-``,
                                 Google ``AIza``
secret        ``[secret]``       credential values: "password is …", ``Bearer``/``Basic``/
                                 ``token`` header values, ``api_key=…``, URL userinfo
                                 (``scheme://user:pass@``); any caller-supplied custom pattern
============  =================  ===========================================================

:mod:`shared.sensitive_patterns` adds, under the kinds above: Stripe ``sk_live_``/``rk_live_``/
``whsec_``, npm ``npm_``, PyPI ``pypi-``, Slack ``xapp-`` and webhook URLs, GitLab ``glpat-``
(and ``glrt- gldt- glptt-``), SendGrid ``SG.``, Twilio ``AC``/``SK`` + 32 hex, Azure AD client
secrets, Azure ``AccountKey=``/``SharedAccessKey=``/``sig=`` values, Hugging Face ``hf_``, an AWS
key id followed by its 40-character secret, spelled-out emails (``jane dot doe at example dot
com``, ``jane [at] example [dot] com``) and phone numbers spelled in words (``four one five …``).

Prefixes and lengths of provider keys follow the providers' published formats and the rules of
public secret scanners (gitleaks, GitHub secret scanning). Every built-in pattern is linear-time:
runs are anchored by look-behinds so a long run of word characters is scanned once, repetition is
bounded or possessive, and numeric candidates are validated in Python (Luhn, mod-97, digit counts)
rather than by backtracking. Ordinary text (``Python 3.12``, ``2024-05-01``, ``10:30``, ``$19.99``,
``Next.js``, years, small numbers) matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from shared.errors import ConfigurationError
from shared.sensitive_patterns import EXTRA_PATTERNS

__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_DETECTOR",
    "PLACEHOLDERS",
    "Finding",
    "SensitiveDetector",
    "iban_valid",
    "luhn_valid",
]

#: Placeholder inserted by :meth:`SensitiveDetector.redact` for each kind of finding.
PLACEHOLDERS: dict[str, str] = {
    "email": "[email]",
    "phone": "[phone]",
    "ssn": "[ssn]",
    "card": "[card]",
    "iban": "[iban]",
    "jwt": "[jwt]",
    "private_key": "[private_key]",
    "aws_key": "[aws_key]",
    "api_key": "[api_key]",
    "secret": "[secret]",
}

#: Kinds produced by the built-in detectors (``secret`` is reserved for custom patterns).
BUILTIN_KINDS: frozenset[str] = frozenset(PLACEHOLDERS) - {"secret"}

#: Redaction repeats while findings remain (a placeholder can change a neighbour's context);
#: in practice one pass suffices, the bound guarantees termination.
_MAX_REDACT_PASSES = 4


class Finding(msgspec.Struct, frozen=True):
    """One sensitive span: ``text[start:end]`` is of ``kind`` (a key of :data:`PLACEHOLDERS`).

    ``0 <= start < end <= len(text)``; offsets are in Python ``str`` code points.
    """

    kind: str
    start: int
    end: int


# ---- validators -------------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """Return True if the string of ASCII digits passes the Luhn check (ISO/IEC 7812-1 annex B).

    ``digits`` must contain only ``0-9``; an empty string is not valid.
    """
    if not digits or not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """Return True if ``candidate`` (spaces allowed) is a well-formed IBAN with mod-97 == 1.

    Rule from ISO 13616-1: move the first four characters to the end, map letters A..Z to
    10..35, and the resulting integer modulo 97 must be 1. Length 15..34 after removing spaces.
    """
    s = candidate.replace(" ", "").upper()
    if not 15 <= len(s) <= 34 or not s.isascii() or not s.isalnum():
        return False
    if not (s[:2].isalpha() and s[2:4].isdigit()):
        return False
    rearranged = s[4:] + s[:4]
    remainder = 0
    for ch in rearranged:
        value = int(ch, 36)  # '0'..'9' → 0..9, 'A'..'Z' → 10..35
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder == 1


def _digit_count(s: str) -> int:
    return sum(1 for ch in s if "0" <= ch <= "9")


def _phone_ok(s: str) -> bool:
    n = _digit_count(s)
    if s.startswith("+"):
        return 8 <= n <= 15
    return 10 <= n <= 11


def _card_ok(s: str) -> bool:
    digits = s.replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


# ---- patterns ---------------------------------------------------------------------------------

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


def _iban_span(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Longest valid IBAN prefix of a candidate match (drops trailing groups that are words)."""
    start, end = m.span()
    cand = text[start:end]
    while True:
        if iban_valid(cand) and not (end < len(text) and text[end].isalnum()):
            return start, end
        cut = cand.rfind(" ")
        if cut <= 4:
            return None
        cand = cand[:cut]
        end = start + cut


_Validator = Callable[[str], bool]
_NUMERIC: tuple[tuple[str, re.Pattern[str], _Validator | None], ...] = (
    ("card", _CARD_RE, _card_ok),
    ("ssn", _SSN_RE, None),
    ("phone", _PHONE_RE, _phone_ok),
)


def _merge(findings: list[Finding]) -> list[Finding]:
    """Sort and merge overlapping spans; a merged span takes the kind of its longest member."""
    if len(findings) < 2:
        return findings
    findings.sort(key=lambda f: (f.start, -f.end))
    out: list[Finding] = []
    first = findings[0]
    start, end, kind, best = first.start, first.end, first.kind, first.end - first.start
    for f in findings[1:]:
        if f.start < end:
            if f.end - f.start > best:
                best, kind = f.end - f.start, f.kind
            end = max(end, f.end)
        else:
            out.append(Finding(kind, start, end))
            start, end, kind, best = f.start, f.end, f.kind, f.end - f.start
    out.append(Finding(kind, start, end))
    return out


@dataclass(frozen=True)
class SensitiveDetector:
    """Immutable detector: the built-ins plus ``custom_patterns`` (Python ``re`` syntax).

    Construct once (e.g. from settings) and share; all methods are pure.

    Raises:
        ConfigurationError: a custom pattern is not a valid regular expression.

    Custom patterns are compiled as given (add ``(?i)`` for case-insensitivity); their matches are
    reported as kind ``secret``. Empty matches are ignored. Callers are responsible for custom
    patterns being free of catastrophic backtracking.
    """

    custom_patterns: tuple[str, ...] = ()
    _custom: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled: list[re.Pattern[str]] = []
        for pattern in self.custom_patterns:
            if not isinstance(pattern, str) or not pattern:
                raise ConfigurationError(
                    f"sensitive pattern must be a non-empty string: {pattern!r}"
                )
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigurationError(f"invalid sensitive pattern {pattern!r}: {exc}") from exc
        object.__setattr__(self, "_custom", tuple(compiled))

    def find(self, text: str) -> list[Finding]:
        """All sensitive spans in ``text``, sorted by start, overlapping spans merged.

        Returns an empty list for ordinary text. Never raises for any ``str`` input.
        """
        found: list[Finding] = []
        for m in _TOKEN_RE.finditer(text):
            kind = m.lastgroup or "secret"
            found.append(Finding(kind, m.start(), m.end()))
        if "=" in text or ":" in text:
            for m in _AWS_SECRET_RE.finditer(text):
                found.append(Finding("aws_key", m.start("v"), m.end("v")))
        if _CREDENTIAL_HINT_RE.search(text) is not None:
            for m in _CREDENTIAL_RE.finditer(text):
                value = m.group("v").rstrip(".,;!?)")
                if value:
                    found.append(Finding("secret", m.start("v"), m.start("v") + len(value)))
        if "@" in text:
            for m in _EMAIL_RE.finditer(text):
                found.append(Finding("email", m.start(), m.end()))
        if _HAS_DIGIT_RE.search(text) is not None:
            for kind, regex, ok in _NUMERIC:
                for m in regex.finditer(text):
                    if ok is None or ok(m.group()):
                        found.append(Finding(kind, m.start(), m.end()))
            for m in _IBAN_RE.finditer(text):
                span = _iban_span(text, m)
                if span is not None:
                    found.append(Finding("iban", span[0], span[1]))
        lowered = text.lower()
        for pattern in EXTRA_PATTERNS:
            if pattern.hint and not any(h in lowered for h in pattern.hint):
                continue
            for m in pattern.regex.finditer(text):
                start, end = m.span(pattern.group)
                if end > start and (pattern.ok is None or pattern.ok(text[start:end])):
                    found.append(Finding(pattern.kind, start, end))
        for regex in self._custom:
            for m in regex.finditer(text):
                if m.end() > m.start():
                    found.append(Finding("secret", m.start(), m.end()))
        return _merge(found)

    def contains_sensitive(self, text: str) -> bool:
        """True if :meth:`find` would return at least one finding."""
        return bool(self.find(text))

    def redact(self, text: str) -> str:
        """``text`` with every finding replaced by its kind's placeholder (see module docstring).

        Repeats (at most a few passes) until no finding remains, so the result contains no
        built-in finding. Text without findings is returned unchanged.
        """
        for _ in range(_MAX_REDACT_PASSES):
            findings = self.find(text)
            if not findings:
                return text
            parts: list[str] = []
            pos = 0
            for f in findings:
                parts.append(text[pos : f.start])
                parts.append(PLACEHOLDERS.get(f.kind, "[secret]"))
                pos = f.end
            parts.append(text[pos:])
            text = "".join(parts)
        return text


#: Detector with the built-ins only, for callers without custom patterns.
DEFAULT_DETECTOR = SensitiveDetector()
