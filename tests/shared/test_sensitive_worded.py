"""Credentials and phone numbers as people type them in chat (``shared.sensitive.worded_patterns``).

The phrasings come from a fresh-user test, where each was stored and injected verbatim.
"""

from __future__ import annotations

import pytest

from shared.sensitive import SensitiveDetector

DETECTOR = SensitiveDetector()


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "The password for my bank account is S3cret!99",
            "The password for my bank account is [secret]",
        ),
        ("My password is: p@ss", "My password is: [secret]"),
        ("My API token is abcd1234efgh5678ijkl9012mnop3456", "My API token is [secret]"),
        ("I prefer my password to be Tr0ub4dor&3", "I prefer my password to be [secret]"),
        (
            "User prefers their password to be Tr0ub4dor&3",
            "User prefers their password to be [secret]",
        ),
        ("I use the passphrase correct horse battery staple", "I use the passphrase [secret]"),
        ("I use the password hunter2 for the wifi", "I use the password [secret] for the wifi"),
        ("my login is dana / Winter2024", "my login is [secret]"),
        ("the wifi access key = Zx81-Qw", "the wifi access key = [secret]"),
        ("My phone number is 0176 1234567", "My phone number is [phone]"),
        ("reach me at 030 12345678 after six", "reach me at [phone] after six"),
        ("Call 030/12345678", "Call [phone]"),
        # the second fresh-user test's phrasings
        ("user: dana pass: Winter2024", "user: dana pass: [secret]"),
        ("My credentials are dana:Winter2024", "My credentials are [secret]"),
        (
            "My password, in case I forget, is Maple2024",
            "My password, in case I forget, is [secret]",
        ),
        ("The code for my front door is 7391", "The code for my front door is [secret]"),
        ("Mein Passwort ist Sommer2023", "Mein Passwort ist [secret]"),
        ("Mon mot de passe est Soleil2024", "Mon mot de passe est [secret]"),
        ("Mi contraseña es Luna2024", "Mi contraseña es [secret]"),
        ("I always use Winter2024 as my password", "I always use [secret] as my password"),
    ],
)
def test_typed_credentials_and_national_phones_are_redacted(text: str, redacted: str) -> None:
    assert DETECTOR.redact(text) == redacted
    assert DETECTOR.contains_sensitive(text)


@pytest.mark.parametrize(
    "text",
    [
        "I forgot my password",
        "the password reset link expired",
        "passwords are hard to remember",
        "a token of appreciation is nice",
        "I changed my PIN 3 times",
        "The key to success is patience",
        "Version 0.12.3 is out",
        "Order 0123 4567 shipped",  # no word of phoning
        "My dog is called Rex",
        "The passphrase",
        "My password is too weak, I should change it",
        "The password is in the drawer",
        "My login is slow on Mondays",
        "The code for the project is on GitHub",
        "I use the same password everywhere",
        "I passed the exam in 2020",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert DETECTOR.redact(text) == text
