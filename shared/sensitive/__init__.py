"""Sensitive-content detection and redaction (see ``docs/ARCHITECTURE.md``).

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

:mod:`shared.sensitive.extra_patterns` adds, under the kinds above: Stripe ``sk_live_``,
``rk_live_``, ``whsec_``; npm ``npm_``; PyPI ``pypi-``; Slack ``xapp-`` and webhook URLs; GitLab
``glpat-`` (and ``glrt- gldt- glptt-``); SendGrid ``SG.``; Twilio ``AC``/``SK`` + 32 hex; Azure
AD client secrets; Azure ``AccountKey=``/``SharedAccessKey=``/``sig=`` values; Hugging Face
``hf_``; an AWS key id followed by its 40-character secret. :mod:`shared.sensitive.spelled`
adds spelled-out emails (``jane dot doe at example dot com``, ``jane [at] example [dot] com``)
and phone numbers spelled in words (``four one five …``). :mod:`shared.sensitive.worded_patterns`
adds credentials as people type them ("The password for my bank account is …", "the password
hunter2", "my login is dana / …", "My API token is …", a passphrase of several words) and
national phone numbers (leading 0, no country code) in a text that speaks of phoning.

Prefixes and lengths of provider keys follow the providers' published formats and the rules of
public secret scanners (gitleaks, GitHub secret scanning). Every built-in pattern is linear-time:
runs are anchored by look-behinds so a long run of word characters is scanned once, repetition is
bounded or possessive, and numeric candidates are validated in Python (Luhn, mod-97, digit counts)
rather than by backtracking. Ordinary text (``Python 3.12``, ``2024-05-01``, ``10:30``, ``$19.99``,
``Next.js``, years, small numbers) matches nothing.
"""

from __future__ import annotations

from shared.sensitive.detector import (
    BUILTIN_KINDS,
    DEFAULT_DETECTOR,
    PLACEHOLDERS,
    Finding,
    SensitiveDetector,
)
from shared.sensitive.validators import iban_valid, luhn_valid

__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_DETECTOR",
    "PLACEHOLDERS",
    "Finding",
    "SensitiveDetector",
    "iban_valid",
    "luhn_valid",
]
