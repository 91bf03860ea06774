"""The ``sensitive_custom_patterns`` setting parsed into a sensitive-content detector."""

from __future__ import annotations

import json

from shared.errors import ConfigurationError
from shared.sensitive import SensitiveDetector


def build_detector(custom_patterns: str) -> SensitiveDetector:
    """The sensitive-content detector for ``sensitive_custom_patterns``.

    The setting is either empty, one regular expression, or a JSON array of them.

    Raises:
        ConfigurationError: not a valid JSON array of strings, or an invalid regex.
    """
    text = custom_patterns.strip()
    if not text:
        return SensitiveDetector()
    if text.startswith("["):
        try:
            patterns = json.loads(text)
        except ValueError as exc:
            raise ConfigurationError(f"sensitive_custom_patterns is not JSON: {exc}") from exc
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ConfigurationError("sensitive_custom_patterns must be a JSON array of strings")
        return SensitiveDetector(custom_patterns=tuple(patterns))
    return SensitiveDetector(custom_patterns=(text,))
