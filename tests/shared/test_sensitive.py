"""Tests for sensitive-content detection and redaction (secret and personal-data formats)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import ConfigurationError
from shared.sensitive import (
    BUILTIN_KINDS,
    DEFAULT_DETECTOR,
    Finding,
    SensitiveDetector,
    iban_valid,
    luhn_valid,
)

GITHUB_TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"

# (text, secret substring, kind, redacted text)
POSITIVES = [
    # the acceptance list
    ("my email is jane.doe@example.com", "jane.doe@example.com", "email", "my email is [email]"),
    ("call me on +1 415 555 0100", "+1 415 555 0100", "phone", "call me on [phone]"),
    ("SSN 123-45-6789", "123-45-6789", "ssn", "SSN [ssn]"),
    ("card 4111 1111 1111 1111", "4111 1111 1111 1111", "card", "card [card]"),
    ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123",
     "api_key", "key [api_key]"),
    (f"token {GITHUB_TOKEN}", GITHUB_TOKEN, "api_key", "token [api_key]"),
    (f"jwt {JWT} ok", JWT, "jwt", "jwt [jwt] ok"),
    (f"{PEM}\nthanks", PEM, "private_key", "[private_key]\nthanks"),
    # the rest of the built-ins
    ("write to a.b+tag@mail.example.co.uk.", "a.b+tag@mail.example.co.uk", "email",
     "write to [email]."),
    ("office (415) 555-0100", "(415) 555-0100", "phone", "office [phone]"),
    ("cell 415-555-0100", "415-555-0100", "phone", "cell [phone]"),
    ("toll free 1-800-555-0100", "1-800-555-0100", "phone", "toll free [phone]"),
    ("uk +44 20 7946 0958", "+44 20 7946 0958", "phone", "uk [phone]"),
    ("card 4111-1111-1111-1111", "4111-1111-1111-1111", "card", "card [card]"),
    ("amex 378282246310005", "378282246310005", "card", "amex [card]"),
    ("IBAN DE89 3704 0044 0532 0130 00 thanks", "DE89 3704 0044 0532 0130 00", "iban",
     "IBAN [iban] thanks"),
    ("iban GB82WEST12345698765432", "GB82WEST12345698765432", "iban", "iban [iban]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", None, "private_key", "[private_key]"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
     None, "private_key", "[private_key]"),
    ("id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_key", "id [aws_key]"),
    ("sts ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "aws_key", "sts [aws_key]"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_key", "aws_secret_access_key=[aws_key]"),
    ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", None, "api_key", "[api_key]"),
    ("old sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghij", None, "api_key", "old [api_key]"),
    ("gho_" + "x" * 36, None, "api_key", "[api_key]"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstu", None, "api_key", "[api_key]"),
    ("slack xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl", "api_key",
     "slack [api_key]"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", None, "api_key", "[api_key]"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret", "kind", "redacted"), POSITIVES)
def test_builtin_detectors(text: str, secret: str | None, kind: str, redacted: str) -> None:
    findings = DEFAULT_DETECTOR.find(text)
    assert [f.kind for f in findings] == [kind]
    if secret is not None:
        assert text[findings[0].start : findings[0].end] == secret
    assert DEFAULT_DETECTOR.contains_sensitive(text)
    assert DEFAULT_DETECTOR.redact(text) == redacted
    if secret is not None:
        assert secret not in DEFAULT_DETECTOR.redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "I prefer Python 3.12 and Node.js 20.11.1",
        "The release is on 2024-05-01 at 10:30, or 05/01/2024",
        "It costs $19.99 or €1,299.00 — see Next.js 14.2 docs",
        "Born in 1987, I have 3 cats and 12 plants; call me maybe",
        "Order #12345, version v2.3.4-beta.1, pi is 3.14159265358979",
        "4111 1111 1111 1112",  # Luhn fails
        "1234 5678 9012 3456",  # Luhn fails
        "DE89 3704 0044 0532 0130 01",  # mod-97 fails
        "SSN 000-12-3456 and 666-12-3456",  # never-issued areas
        "ask sk-short or task-runner-config, gh_token, AKIA123",
        "email me at the office @ 9",
        "ISO 8601: 2024-05-01T10:30:00Z; uuid 123e4567-e89b-12d3-a456-426614174000",
        "Port 8080, PID 4242, 1,000,000 rows, 10.0.0.1",
        "",
    ],
)
def test_no_false_positives(text: str) -> None:
    assert DEFAULT_DETECTOR.find(text) == []
    assert DEFAULT_DETECTOR.redact(text) == text


def test_overlapping_findings_are_merged() -> None:
    detector = SensitiveDetector(custom_patterns=(r"jane\.doe",))
    text = "mail jane.doe@example.com now"
    assert detector.find(text) == [Finding("email", 5, 25)]
    assert detector.redact(text) == "mail [email] now"


def test_multiple_findings_in_order() -> None:
    text = f"a@b.io and {GITHUB_TOKEN} and 123-45-6789"
    assert [f.kind for f in DEFAULT_DETECTOR.find(text)] == ["email", "api_key", "ssn"]
    assert DEFAULT_DETECTOR.redact(text) == "[email] and [api_key] and [ssn]"


def test_custom_patterns_are_secrets() -> None:
    detector = SensitiveDetector(custom_patterns=(r"(?i)project\s+falcon", r"ACME-\d{4}"))
    assert detector.redact("Project Falcon ships ACME-1234") == "[secret] ships [secret]"
    assert DEFAULT_DETECTOR.find("Project Falcon") == []


def test_custom_pattern_matching_empty_string_is_ignored() -> None:
    assert SensitiveDetector(custom_patterns=(r"x*",)).find("abc") == []


@pytest.mark.parametrize("pattern", ["(unclosed", "[z-a]", "*oops", ""])
def test_invalid_custom_pattern_is_configuration_error(pattern: str) -> None:
    with pytest.raises(ConfigurationError):
        SensitiveDetector(custom_patterns=(pattern,))


def test_detector_is_frozen() -> None:
    with pytest.raises(AttributeError):
        DEFAULT_DETECTOR.custom_patterns = ("x",)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("digits", "ok"),
    [("4111111111111111", True), ("4111111111111112", False), ("79927398713", True), ("", False)],
)
def test_luhn(digits: str, ok: bool) -> None:
    assert luhn_valid(digits) is ok


@pytest.mark.parametrize(
    ("iban", "ok"),
    [
        ("DE89 3704 0044 0532 0130 00", True),
        ("GB82 WEST 1234 5698 7654 32", True),
        ("GB82 WEST 1234 5698 7654 33", False),
        ("DE89", False),
    ],
)
def test_iban(iban: str, ok: bool) -> None:
    assert iban_valid(iban) is ok


@pytest.mark.parametrize(
    "text",
    [
        "a" * 50_000,
        "1" * 50_000,
        "1 " * 25_000,
        "a@" * 25_000,
        "eyJ" * 20_000,
        "+1 " * 20_000,
        "DE89 " * 10_000,
        "-----BEGIN PRIVATE KEY-----" * 2_000,
        "sk-" * 20_000,
        "a." * 25_000 + "@",
    ],
)
def test_no_catastrophic_backtracking(text: str) -> None:
    started = time.perf_counter()
    DEFAULT_DETECTOR.redact(text)
    assert time.perf_counter() - started < 1.0


def _assert_clean(text: str) -> None:
    redacted = DEFAULT_DETECTOR.redact(text)
    assert [f for f in DEFAULT_DETECTOR.find(redacted) if f.kind in BUILTIN_KINDS] == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_redact_never_raises_and_leaves_no_finding(text: str) -> None:
    _assert_clean(text)


_PIECES = st.sampled_from(
    ["a@b.io", "+1 415 555 0100", "123-45-6789", "4111 1111 1111 1111", GITHUB_TOKEN, JWT,
     "AKIAIOSFODNN7EXAMPLE", " ", "-", ".", "1", "x", "@", "\n", "DE89 3704 0044 0532 0130 00"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_redact_adversarial_concatenations(text: str) -> None:
    _assert_clean(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My password is hunter2", "My password is [secret]"),
        ("my PIN: 4411.", "my PIN: [secret]."),
        ("the passcode = x9!y", "the passcode = [secret]"),
        ("Our secret key=abc123def", "Our secret key=[secret]"),
        ("I forgot my password", "I forgot my password"),
        ("Pinterest is fun", "Pinterest is fun"),
        ("the code is clean", "the code is clean"),
    ],
)
def test_credentials_stated_in_words_are_redacted(text, expected):
    assert SensitiveDetector().redact(text) == expected
