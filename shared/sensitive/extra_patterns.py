"""Extra sensitive-content patterns: provider tokens, credential headers and URL credentials.

The table :class:`shared.sensitive.SensitiveDetector` runs after its built-in patterns.

Each :class:`Pattern` has a kind (a key of ``shared.sensitive.PLACEHOLDERS``), a compiled
expression, the group that is the finding (0 = the whole match) and an optional validator of that
group. Token prefixes and lengths follow the providers' published formats and the rules of public
secret scanners (gitleaks ``config/gitleaks.toml``, GitHub secret scanning's pattern list,
Yelp ``detect-secrets`` plugins). Every expression is linear-time: runs are bounded or possessive
and anchored by look-behinds, validation happens in Python.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

from shared.sensitive.finding import Finding

__all__ = ["EXTRA_PATTERNS", "Pattern", "scan_extra"]

_B = r"(?<![A-Za-z0-9_-])"  # token start: not inside a longer word
_E = r"(?![A-Za-z0-9_-])"  # token end


@dataclass(frozen=True)
class Pattern:
    """One detector of the table.

    ``regex`` finds candidates, ``group`` is the span reported as ``kind``, ``ok`` (optional)
    must accept that span's text, and ``hint`` (lower-case substrings; empty = always) must
    occur in the lower-cased text for the regex to run at all (a cheap filter).
    """

    kind: str
    regex: re.Pattern[str]
    group: int | str = 0
    ok: Callable[[str], bool] | None = None
    hint: tuple[str, ...] = ()


def _has_digit_and_letter(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _basic_credentials(s: str) -> bool:
    """True if ``s`` is base64 of ``user:password`` (RFC 7617 §2)."""
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw and raw.isascii() and raw.index(b":") > 0


_I = re.IGNORECASE
EXTRA_PATTERNS: tuple[Pattern, ...] = (
    # ---- provider tokens (prefix + length) -----------------------------------------------------
    Pattern(
        "api_key",
        re.compile(
            _B + r"(?:"
            r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}+"  # Stripe secret / restricted keys
            r"|whsec_[A-Za-z0-9]{24,}+"  # Stripe webhook secret
            r"|npm_[A-Za-z0-9]{36}"  # npm access token
            r"|pypi-[A-Za-z0-9_-]{50,}+"  # PyPI API token (macaroon)
            r"|xapp-\d-[A-Za-z0-9-]{20,}+"  # Slack app-level token
            r"|gl(?:pat|rt|dt|ptt|ft|soat)-[A-Za-z0-9_-]{20,}+"  # GitLab tokens
            r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"  # SendGrid API key
            r"|(?:AC|SK)[0-9a-f]{32}"  # Twilio account / API key SID
            r"|[A-Za-z0-9_~.-]{3}8Q~[A-Za-z0-9_~.-]{31,34}"  # Azure AD client secret
            r"|hf_[A-Za-z0-9]{34,}+"  # Hugging Face token
            r")" + _E
        ),
        hint=("_", "-", "sg.", "ac", "sk", "8q~"),
    ),
    Pattern(
        "api_key",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{20,}+"),
        hint=("hooks.slack.com",),
    ),
    # AWS access key id followed by its secret (a pasted pair): the secret is the finding
    Pattern(
        "aws_key",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}[\s\"',;:=|/]{1,20}"
            r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        group="v",
        ok=_has_digit_and_letter,
        hint=("akia", "asia"),
    ),
    # Azure storage / service bus connection strings and SAS signatures: the key value
    Pattern(
        "api_key",
        re.compile(
            r"(?:[Aa]ccount[Kk]ey|[Ss]hared[Aa]ccess(?:[Kk]ey|[Ss]ignature)|sig)="
            r"(?P<v>[A-Za-z0-9%+/=]{20,}+)"
        ),
        group="v",
        hint=("accountkey", "sharedaccess", "sig="),
    ),
    # ---- credential headers ----------------------------------------------------------------
    Pattern(
        "secret",
        re.compile(r"(?i:\b(?:bearer|token))\s{1,3}(?P<v>[A-Za-z0-9._~+/=-]{16,512}+)"),
        group="v",
        ok=_has_digit_and_letter,
        hint=("bearer", "token"),
    ),
    Pattern(
        "secret",
        re.compile(r"(?i:\bbasic)\s{1,3}(?P<v>[A-Za-z0-9+/]{6,512}+={0,2})"),
        group="v",
        ok=_basic_credentials,
        hint=("basic",),
    ),
    Pattern(
        "secret",
        re.compile(
            r"(?i:\b(?:x-api-key|api[_-]?key|auth[_-]?token))[\"']?\s{0,3}[:=]\s{0,3}"
            r"[\"']?(?P<v>[A-Za-z0-9._~+/=-]{12,256}+)"
        ),
        group="v",
        ok=_has_digit_and_letter,
        hint=("key", "token"),
    ),
    # ---- credentials in URLs (scheme://user:password@host): the userinfo is the finding ---
    Pattern(
        "secret",
        re.compile(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<v>[^\s:/@\"'<>]{1,128}:[^\s/@\"'<>]{1,256})@"
        ),
        group="v",
        hint=("://",),
    ),
)


def scan_extra(text: str, found: list[Finding]) -> None:
    """Append every finding of :data:`EXTRA_PATTERNS` in ``text`` to ``found``."""
    lowered = text.lower()
    for pattern in EXTRA_PATTERNS:
        if pattern.hint and not any(h in lowered for h in pattern.hint):
            continue
        for m in pattern.regex.finditer(text):
            start, end = m.span(pattern.group)
            if end > start and (pattern.ok is None or pattern.ok(text[start:end])):
                found.append(Finding(pattern.kind, start, end))
