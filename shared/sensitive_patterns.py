"""Extra sensitive-content patterns: provider tokens, credential headers, URL credentials and
spelled-out emails and phone numbers (the table :class:`shared.sensitive.SensitiveDetector`
runs after its built-in patterns).

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

__all__ = ["EXTRA_PATTERNS", "Pattern"]

_B = r"(?<![A-Za-z0-9_-])"  # token start: not inside a longer word
_E = r"(?![A-Za-z0-9_-])"  # token end


@dataclass(frozen=True)
class Pattern:
    """One detector: ``regex`` finds candidates, ``group`` is the span reported as ``kind``,
    ``ok`` (optional) must accept that span's text, and ``hint`` (lower-case substrings; empty
    = always) must occur in the lower-cased text for the regex to run at all (a cheap filter)."""

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


_DIGIT_WORDS = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_WORD_DIGITS = re.compile(_DIGIT_WORDS, re.IGNORECASE)


def _spelled_phone(s: str) -> bool:
    """At least 9 digits, at least 3 of them spelled as words (``four one five ...``)."""
    words = len(_WORD_DIGITS.findall(s))
    return words >= 3 and words + sum(c.isdigit() for c in s) >= 9


#: Words before ``at`` that make "X at Y dot com" ordinary prose ("I work at acme dot com").
_PROSE_BEFORE_AT = frozenset(
    {
        *("work", "works", "worked", "working", "look", "looking", "looked", "be", "is", "am"),
        *("are", "was", "were", "meet", "me", "us", "him", "her", "them", "it", "stay"),
        *("stayed", "live", "lives", "lived", "living", "arrive", "arrived", "shop", "shopped"),
        *("buy", "bought", "sign", "signed", "apply", "applied", "job", "intern", "interned"),
        *("study", "studied", "stuff", "things", "something"),
    }
)
_PROSE_DOMAIN = frozenset(
    [
        "the",
        "a",
        "an",
        "my",
        "your",
        "our",
        "this",
        "that",
        "home",
        "school",
        "night",
        "least",
        "all",
    ]
)
_SPELLED_AT = re.compile(r"\s*(?:@|[(\[{<]\s*at\s*[)\]}>])\s*|\s+at\s+", re.IGNORECASE)
_SPELLED_DOT = r"(?:\s*(?:\.|[(\[{<]\s*dot\s*[)\]}>])\s*|\s+dot\s+)"


def _spelled_email(s: str) -> bool:
    """Reject prose such as "I work at acme dot com" or "look at the dot com era"."""
    parts = _SPELLED_AT.split(s, maxsplit=1)
    if len(parts) != 2:
        return False
    local, domain = parts[0].strip().lower(), parts[1].strip().lower()
    last_local = re.split(r"\W+", local)[-1]
    first_domain = re.split(r"\W+", domain)[0]
    return last_local not in _PROSE_BEFORE_AT and first_domain not in _PROSE_DOMAIN


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
            r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=(?P<v>[A-Za-z0-9%+/=]{20,}+)"
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
    # ---- spelled-out emails and phones -----------------------------------------------------
    Pattern(
        "email",
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9_%+-]{1,64}(?:"
            + _SPELLED_DOT
            + r"[A-Za-z0-9_%+-]{1,64}){0,4}"
            r"(?:\s*[(\[{<]\s*at\s*[)\]}>]\s*|\s+at\s+)"
            r"[A-Za-z0-9-]{1,63}(?:"
            + _SPELLED_DOT
            + r"[A-Za-z0-9-]{1,63}){0,3}"
            + _SPELLED_DOT
            + r"(?:com|org|net|edu|gov|io|co|de|uk|fr|es|it|nl|ch|at|be|se|no|"
            r"dk|fi|pl|ru|jp|cn|in|br|au|ca|us|me|info|biz|dev|app|ai)(?![A-Za-z0-9])",
            _I,
        ),
        ok=_spelled_email,
        hint=("at",),
    ),
    Pattern(
        "phone",
        re.compile(
            r"(?<![A-Za-z0-9])(?:\+\s?)?(?:(?:" + _DIGIT_WORDS + r"|\d{1,4})[\s,.()-]{1,3}){6,20}"
            r"(?:" + _DIGIT_WORDS + r"|\d{1,4})(?![A-Za-z0-9])",
            _I,
        ),
        ok=_spelled_phone,
        hint=("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "zero"),
    ),
)
