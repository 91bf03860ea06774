"""Credentials and phone numbers as people type them in chat; see :mod:`shared.sensitive`.

The built-in patterns (:mod:`shared.sensitive.builtin_patterns`) catch a credential whose keyword
is right before its value ("my password is hunter2", "PIN: 4411") and phone numbers in
international or North American form. People also write:

- a phrase between the keyword and its value, or another verb: "The password for my bank
  account is S3cret!99", "I want my password to be Tr0ub4dor&3", "My password is: p@ss";
- no verb at all: "I use the password hunter2 for the wifi" (only a value holding a digit or a
  symbol counts, so "the password reset link" is no finding);
- other keywords: "my login is dana / Winter2024!", "My API token is abcd1234…", "access key";
- a passphrase of several words: "I use the passphrase correct horse battery staple";
- a national phone number, leading 0 and no country code ("0176 1234567", "030/12345678"),
  counted only in a text that speaks of phoning (:data:`_PHONE_CUES`).

Each finding is the value only. Every expression is linear-time (bounded runs, no nested
repetition over the same characters).
"""

from __future__ import annotations

import re

from shared.sensitive.builtin_patterns import NOT_A_VALUE
from shared.sensitive.finding import Finding

__all__ = ["scan_worded"]

_KEYWORD = (
    r"(?i:\b(?:password|passwd|passphrase|passcode|pass\s?code|pin(?:\s?code)?|pwd|login|"
    r"credentials|(?:api|access|auth|secret|session|refresh|bearer|personal\s+access)[\s_-]?"
    r"(?:token|key)|(?<=my\s)token|(?<=the\s)token|(?<=our\s)token|"
    r"passwort|kennwort|mot\s+de\s+passe|contrase[ñn]a|clave)s?)"
)
#: "for my bank account", "on the router": up to four words before the verb; or an aside
#: between commas ("My password, in case I forget, is …").
_PHRASE = (
    r"(?:\s{1,3}(?i:for|to|of|on|at|in)(?:\s{1,3}[^\s.,;:!?=]{1,30}){1,4}?"
    r"|\s{0,2},[^,.;:!?\n]{1,40},)?"
)
_VERB = (
    r"(?:\s{1,3}(?i:is|was|will\s+be|would\s+be|should\s+be|to\s+be|=|ist|est|es)"
    r"(?:\s{0,3}:)?|(?<=(?i:credentials))\s{1,3}(?i:are)(?:\s{0,3}:)?|\s{0,3}[:=])"
)
_VALUE = r"[\"'`]?(?P<v>[^\s\"'`]{2,128}(?:\s{0,2}/\s{0,2}[^\s\"'`]{2,128})?)"
_STATED_RE = re.compile(_KEYWORD + _PHRASE + _VERB + r"\s{0,3}" + _VALUE)
#: "the password hunter2": a keyword, then the value (checked by :func:`_looks_secret`).
_BARE_RE = re.compile(
    r"(?i:\b(?:password|passphrase|passcode|pin|pwd))\s{1,3}[\"'`]?"
    r"(?P<v>[A-Za-z0-9][^\s\"'`]{3,127})"
)
#: "the passphrase correct horse battery staple": up to eight words after it.
_PASSPHRASE_RE = re.compile(
    r"(?i:\bpassphrase)(?:\s{1,3}(?i:is|was|=|:))?\s{1,3}[\"'`]?"
    r"(?P<v>[^\s.,;!?\"'`]{1,40}(?:[ \t]{1,3}[^\s.,;!?\"'`]{1,40}){0,7})"
)
#: "the code for my front door is 7391", "user: dana pass: Winter2024": a weaker keyword, so
#: the value must hold a digit.
_CODE_RE = re.compile(r"(?i:\b(?:code|combination|pass))" + _PHRASE + _VERB + r"\s{0,3}" + _VALUE)
#: "I always use Winter2024 as my password": the value before its keyword.
_USED_AS_RE = re.compile(
    r"(?i:\b(?:use|using|used|set|chose|choose|picked|pick)\s{1,3})[\"'`]?"
    r"(?P<v>[A-Za-z0-9][^\s\"'`]{3,127})[\"'`]?\s{1,3}(?i:as|for)\s{1,3}(?i:my|the|our|a)\s{1,3}"
    r"(?i:password|passcode|pin|passphrase|login)"
)
_HINTS = (
    "pass",
    "pin",
    "pwd",
    "login",
    "credential",
    "token",
    "key",
    "kennwort",
    "contrase",
    "clave",
)
_NATIONAL_PHONE_RE = re.compile(r"(?<![\w+.,/-])0\d{2,4}(?:[ /-]?\d{2,5}){1,3}(?![\w.,/-])")
_PHONE_CUES = re.compile(
    r"(?i:phone|mobile|cell|number|call|text\s+me|reach|tel\b|telephone|whatsapp|signal|"
    r"handy|nummer|fax|landline|ring)"
)
_NATIONAL_DIGITS = range(9, 13)
_TRAILING = ".,;!?)"


def _looks_secret(value: str) -> bool:
    """A value typed as a secret: a digit or a symbol in it (not a plain word)."""
    return any(not ch.isalpha() for ch in value)


def _add(found: list[Finding], m: re.Match[str], digit: bool = False) -> None:
    """The value of ``m`` as a finding, unless it is a word that says something of it.

    ``digit``: only a value holding a digit counts (a weak keyword such as "code").
    """
    value = m.group("v").rstrip(_TRAILING)
    if not value or value.lower() in NOT_A_VALUE:
        return
    if digit and not any(ch.isdigit() for ch in value):
        return
    found.append(Finding("secret", m.start("v"), m.start("v") + len(value)))


def scan_worded(text: str, found: list[Finding]) -> None:
    """Append the credentials and national phone numbers stated in words in ``text``."""
    lowered = text.lower()
    if any(h in lowered for h in _HINTS):
        _scan_credentials(text, lowered, found)
    has_digit = any(ch.isdigit() for ch in text)
    if has_digit and ("code" in lowered or "combination" in lowered or "pass" in lowered):
        for m in _CODE_RE.finditer(text):
            _add(found, m, digit=True)
    if has_digit and _PHONE_CUES.search(text) is not None:
        for m in _NATIONAL_PHONE_RE.finditer(text):
            if sum(ch.isdigit() for ch in m.group()) in _NATIONAL_DIGITS:
                found.append(Finding("phone", m.start(), m.end()))


def _scan_credentials(text: str, lowered: str, found: list[Finding]) -> None:
    """The credentials of a text holding one of the keywords' hints."""
    for m in _STATED_RE.finditer(text):
        _add(found, m)
    for regex in (_BARE_RE, _USED_AS_RE):
        for m in regex.finditer(text):
            if _looks_secret(m.group("v").rstrip(_TRAILING)):
                _add(found, m)
    if "passphrase" in lowered:
        for m in _PASSPHRASE_RE.finditer(text):
            _add(found, m)
