"""The ``sensitive_custom_patterns`` setting parsed into a sensitive-content detector."""

from __future__ import annotations

import json

from shared.sensitive import SensitiveDetector


def build_detector(custom_patterns: str) -> SensitiveDetector:
    """The sensitive-content detector for ``sensitive_custom_patterns``.

    The setting is either empty, a JSON array of regular expressions, or one regular expression
    (any text that is not a JSON array of strings, so ``[a-z]+`` is a regex).

    Raises:
        ConfigurationError: an invalid regex.
    """
    text = custom_patterns.strip()
    if not text:
        return SensitiveDetector()
    if text.startswith("["):
        try:
            patterns = json.loads(text)
        except ValueError:
            patterns = None
        if isinstance(patterns, list) and all(isinstance(p, str) for p in patterns):
            return SensitiveDetector(custom_patterns=tuple(patterns))
    return SensitiveDetector(custom_patterns=(text,))
