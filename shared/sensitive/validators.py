"""Validators of numeric candidates (checksums and digit counts), pure functions."""

from __future__ import annotations

__all__ = ["card_ok", "iban_valid", "luhn_valid", "phone_ok"]

#: Largest single decimal digit; a doubled Luhn digit above it has its digits summed.
_MAX_DIGIT = 9
#: IBAN length without spaces (ISO 13616-1): 15 (Norway) .. 34.
_IBAN_LEN = range(15, 35)
#: Digits of an international number (ITU-T E.164 §6: at most 15; 8 excludes short codes).
_E164_DIGITS = range(8, 16)
#: Digits of a national (NANP) number, without and with the leading 1.
_NANP_DIGITS = range(10, 12)
#: Card number length (ISO/IEC 7812-1).
_CARD_DIGITS = range(13, 20)


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
            if d > _MAX_DIGIT:
                d -= _MAX_DIGIT
        total += d
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """Return True if ``candidate`` (spaces allowed) is a well-formed IBAN with mod-97 == 1.

    Rule from ISO 13616-1: move the first four characters to the end, map letters A..Z to
    10..35, and the resulting integer modulo 97 must be 1. Length 15..34 after removing spaces.
    """
    s = candidate.replace(" ", "").upper()
    if len(s) not in _IBAN_LEN or not s.isascii() or not s.isalnum():
        return False
    if not (s[:2].isalpha() and s[2:4].isdigit()):
        return False
    rearranged = s[4:] + s[:4]
    remainder = 0
    for ch in rearranged:
        value = int(ch, 36)  # '0'..'9' → 0..9, 'A'..'Z' → 10..35
        remainder = (remainder * (100 if value > _MAX_DIGIT else 10) + value) % 97
    return remainder == 1


def _digit_count(s: str) -> int:
    return sum(1 for ch in s if "0" <= ch <= "9")


def phone_ok(s: str) -> bool:
    """True if ``s`` has a phone's digit count.

    ``+`` and 8..15 digits (ITU-T E.164 §6), else 10..11 digits (NANP with or without the
    leading 1).
    """
    n = _digit_count(s)
    if s.startswith("+"):
        return n in _E164_DIGITS
    return n in _NANP_DIGITS


def card_ok(s: str) -> bool:
    """True if ``s`` (spaces/dashes allowed) is 13..19 digits passing Luhn (ISO/IEC 7812)."""
    digits = s.replace(" ", "").replace("-", "")
    return len(digits) in _CARD_DIGITS and luhn_valid(digits)
