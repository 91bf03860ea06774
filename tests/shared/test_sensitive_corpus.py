"""Table-driven corpus for the sensitive-content detector: provider tokens, credential headers,
URL credentials, spelled-out emails and phones must be found; near misses (prose, code
identifiers, version strings, UUIDs, hashes) must not be."""

from __future__ import annotations

import pytest

from shared.sensitive import DEFAULT_DETECTOR

POSITIVES: list[tuple[str, str, str]] = [
    # (text, the secret that must disappear, kind expected)
    ("stripe key sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "api_key"),
    ("restricted rk_live_51H8xYzAbCdEfGhIjKlMnOp", "rk_live_51H8xYzAbCdEfGhIjKlMnOp", "api_key"),
    (
        "npm token npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "api_key",
    ),
    (
        "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjEyLTM0NTYtNzg5MC1hYmNkLWVmMTIzNDU2Nzg5MAACKlszLCJi",
        "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjEyLTM0NTYtNzg5MC1hYmNkLWVmMTIzNDU2Nzg5MAACKlszLCJi",
        "api_key",
    ),
    (
        "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "api_key",
    ),
    ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_key"),
    (
        "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_key",
    ),
    (
        "google AIzaSyD-1234567890abcdefghijklmnopqrstu",
        "AIzaSyD-1234567890abcdefghijklmnopqrstu",
        "api_key",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq",
        "api_key",
    ),
    (
        "client secret abc8Q~Zyxwvutsrqponmlkjihgfedcba0123456",
        "abc8Q~Zyxwvutsrqponmlkjihgfedcba0123456",
        "api_key",
    ),
    ("gitlab glpat-xYz12AbC34dEf56GhI78jK", "glpat-xYz12AbC34dEf56GhI78jK", "api_key"),
    ("twilio AC0123456789abcdef0123456789abcdef", "AC0123456789abcdef0123456789abcdef", "api_key"),
    (
        "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",
        "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",
        "api_key",
    ),
    (
        "Authorization: Bearer 0123456789abcdef0123456789abcdef",
        "0123456789abcdef0123456789abcdef",
        "secret",
    ),
    ("curl -H 'Authorization: Basic dXNlcjpodW50ZXIy' https://x", "dXNlcjpodW50ZXIy", "secret"),
    # userinfo merges with the email-shaped "pass@host" span: one finding, kind email
    ("connect to postgres://admin:s3cr3tPass@db.internal:5432/app", "admin:s3cr3tPass", "email"),
    ("https://bob:hunter2@example.com/path", "bob:hunter2", "email"),
    ("reach me at jane dot doe at example dot com", "jane dot doe at example dot com", "email"),
    ("mail jane.doe [at] example [dot] org please", "jane.doe [at] example [dot] org", "email"),
    ("john (at) corp (dot) io", "john (at) corp (dot) io", "email"),
    ("write to jane.doe at example.com", "jane.doe at example.com", "email"),
    ("call 415 five five five 0 one 0 0", "415 five five five 0 one 0 0", "phone"),
    (
        "call four one five five five five zero one zero zero",
        "four one five five five five zero one zero zero",
        "phone",
    ),
    ("api_key = 'a1b2c3d4e5f6g7h8i9j0'", "a1b2c3d4e5f6g7h8i9j0", "secret"),
    # the eight acceptance formats stay caught
    ("my email is jane.doe@example.com", "jane.doe@example.com", "email"),
    ("call me on +1 415 555 0100", "+1 415 555 0100", "phone"),
    ("SSN 123-45-6789", "123-45-6789", "ssn"),
    ("card 4111 1111 1111 1111", "4111 1111 1111 1111", "card"),
    ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", "api_key"),
    ("token ghp_" + "a1B2c3D4e5" * 3 + "a1B2c3", "ghp_" + "a1B2c3D4e5" * 3 + "a1B2c3", "api_key"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig_abc",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig_abc",
        "jwt",
    ),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----", "MIIEvQ", "private_key"),
]

NEGATIVES: list[str] = [
    "I prefer Next.js for frontend and Python 3.12 for scripts",
    "We upgraded to version 2.14.0-rc.1 on 2024-05-01 at 10:30",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "the bearer of bad news arrived",
    "bearer tokens are documented in RFC 6750",
    "a basic understanding of SQL",
    "I work at acme dot com",
    "look at the dot com era",
    "I stayed with Bob at Oxford. It was fun",
    "we had dinner at eight, then drinks at nine",
    "the cat sat on the mat at dawn",
    "version one point two, build 2024",
    "meet me at home at seven",
    "one two three, here we go",
    "use the sk_test prefix in docs only",
    "call get_api_key() then load_token_from_env()",
    "pypi-simple is a package name",
    "the npm_config_cache variable",
    "SGX enclave and SG.mode in code",
    "https://example.com/a:b/c",
    "price $19.99, 3 items, room 101",
    "ACME Corp and SKU 12",
    "see https://docs.python.org/3/library/re.html",
]


@pytest.mark.parametrize(("text", "secret", "kind"), POSITIVES)
def test_positive_is_found_and_redacted(text: str, secret: str, kind: str) -> None:
    findings = DEFAULT_DETECTOR.find(text)
    assert findings, text
    assert kind in {f.kind for f in findings}, (text, findings)
    assert secret not in DEFAULT_DETECTOR.redact(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_near_miss_is_not_flagged(text: str) -> None:
    assert DEFAULT_DETECTOR.find(text) == [], text
