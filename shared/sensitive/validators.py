"""Validators of numeric candidates (checksums and digit counts), pure functions."""

from __future__ import annotations

__all__ = ["card_ok", "iban_valid", "luhn_valid", "phone_ok"]


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


def phone_ok(s: str) -> bool:
    """True if ``s`` has a phone's digit count: ``+`` and 8..15 digits (ITU-T E.164 §6), else
    10..11 digits (NANP with or without the leading 1)."""
    n = _digit_count(s)
    if s.startswith("+"):
        return 8 <= n <= 15
    return 10 <= n <= 11


def card_ok(s: str) -> bool:
    """True if ``s`` (spaces/dashes allowed) is 13..19 digits passing Luhn (ISO/IEC 7812)."""
    digits = s.replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and luhn_valid(digits)
