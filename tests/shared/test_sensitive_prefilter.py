"""The built-in scan's cheap pre-checks skip only scans that could not find anything.

Every pre-check (token prefixes, digit counts, the AWS label) is compared with running every
regular expression unconditionally, on generated text mixing secrets, numbers in ASCII and other
scripts' digits, and case-folding look-alikes.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.sensitive import builtin_patterns as bp
from shared.sensitive.finding import Finding

FRAGMENTS = [
    "sk-proj-abcdefghijklmnopqrstuvwx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a" * 36,
    "-----BEGIN RSA PRIVATE KEY-----abc",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWſ_SECRET_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "my password is hunter2",
    "4111 1111 1111 1111",
    "４１１１１１１１１１１１１１１１",
    "123-45-6789",
    "+49 30 1234567",
    "(415) 555-0100",
    "415-555-0100",
    "٤١٥-٥٥٥-٠١٠٠",
    "GB82 WEST 1234 5698 7654 32",
    "a@b.co",
    "[1:56 pm on 8 May, 2023]",
    "Caroline:",
    "the",
    " ",
    "7",
    "=",
    "my PIN: 4411",
    "door code = 2580",
    "Passphrase is x9!",
    "ſecret key: abc123",
    "shopping",
    "+1 2",
]


def unfiltered(text: str) -> list[Finding]:
    """Every built-in regex run on ``text`` without any pre-check."""
    found: list[Finding] = []
    for m in bp._TOKEN_RE.finditer(text):
        found.append(Finding(m.lastgroup or "secret", m.start(), m.end()))
    for m in bp._AWS_SECRET_RE.finditer(text):
        found.append(Finding("aws_key", m.start("v"), m.end("v")))
    for m in bp._CREDENTIAL_RE.finditer(text):
        value = m.group("v").rstrip(".,;!?)")
        if value and value.lower() not in bp.NOT_A_VALUE:
            found.append(Finding("secret", m.start("v"), m.start("v") + len(value)))
    for m in bp._EMAIL_RE.finditer(text):
        found.append(Finding("email", m.start(), m.end()))
    for kind, regex, ok, _ in bp._NUMERIC:
        for m in regex.finditer(text):
            if ok is None or ok(m.group()):
                found.append(Finding(kind, m.start(), m.end()))
    for m in bp._IBAN_RE.finditer(text):
        span = bp._iban_span(text, m)
        if span is not None:
            found.append(Finding("iban", span[0], span[1]))
    return sorted(found, key=lambda f: (f.start, f.end, f.kind))


def filtered(text: str) -> list[Finding]:
    found: list[Finding] = []
    bp.scan_builtin(text, found)
    return sorted(found, key=lambda f: (f.start, f.end, f.kind))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=8))
def test_pre_checks_change_no_finding(parts: list[str]) -> None:
    text = " ".join(parts)
    assert filtered(text) == unfiltered(text)


def test_every_fragment_alone_and_together() -> None:
    for text in [*FRAGMENTS, " ".join(FRAGMENTS)]:
        assert filtered(text) == unfiltered(text), text
