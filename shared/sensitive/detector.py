"""The :class:`SensitiveDetector` and its placeholders.

Built-ins, extra patterns and custom patterns; see :mod:`shared.sensitive` for what it finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shared.errors import ConfigurationError
from shared.sensitive.builtin_patterns import scan_builtin
from shared.sensitive.extra_patterns import scan_extra
from shared.sensitive.finding import Finding
from shared.sensitive.spelled import scan_spelled
from shared.sensitive.worded_patterns import scan_worded

__all__ = ["BUILTIN_KINDS", "DEFAULT_DETECTOR", "PLACEHOLDERS", "Finding", "SensitiveDetector"]

#: Placeholder inserted by :meth:`SensitiveDetector.redact` for each kind of finding.
PLACEHOLDERS: dict[str, str] = {
    "email": "[email]",
    "phone": "[phone]",
    "ssn": "[ssn]",
    "card": "[card]",
    "iban": "[iban]",
    "jwt": "[jwt]",
    "private_key": "[private_key]",
    "aws_key": "[aws_key]",
    "api_key": "[api_key]",
    "secret": "[secret]",
}

#: Kinds produced by the built-in detectors (``secret`` is reserved for custom patterns).
BUILTIN_KINDS: frozenset[str] = frozenset(PLACEHOLDERS) - {"secret"}

#: Redaction repeats while findings remain (a placeholder can change a neighbour's context);
#: in practice one pass suffices, the bound guarantees termination.
_MAX_REDACT_PASSES = 4


def _merge(findings: list[Finding]) -> list[Finding]:
    """Sort and merge overlapping spans; a merged span takes the kind of its longest member."""
    if len(findings) <= 1:
        return findings
    findings.sort(key=lambda f: (f.start, -f.end))
    out: list[Finding] = []
    first = findings[0]
    start, end, kind, best = first.start, first.end, first.kind, first.end - first.start
    for f in findings[1:]:
        if f.start < end:
            if f.end - f.start > best:
                best, kind = f.end - f.start, f.kind
            end = max(end, f.end)
        else:
            out.append(Finding(kind, start, end))
            start, end, kind, best = f.start, f.end, f.kind, f.end - f.start
    out.append(Finding(kind, start, end))
    return out


@dataclass(frozen=True)
class SensitiveDetector:
    """Immutable detector: the built-ins plus ``custom_patterns`` (Python ``re`` syntax).

    Construct once (e.g. from settings) and share; all methods are pure.

    Raises:
        ConfigurationError: a custom pattern is not a valid regular expression.

    Custom patterns are compiled as given (add ``(?i)`` for case-insensitivity); their matches are
    reported as kind ``secret``. Empty matches are ignored. Callers are responsible for custom
    patterns being free of catastrophic backtracking.
    """

    custom_patterns: tuple[str, ...] = ()
    _custom: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled: list[re.Pattern[str]] = []
        for pattern in self.custom_patterns:
            if not isinstance(pattern, str) or not pattern:
                raise ConfigurationError(
                    f"sensitive pattern must be a non-empty string: {pattern!r}"
                )
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigurationError(f"invalid sensitive pattern {pattern!r}: {exc}") from exc
        object.__setattr__(self, "_custom", tuple(compiled))

    def find(self, text: str) -> list[Finding]:
        """All sensitive spans in ``text``, sorted by start, overlapping spans merged.

        Returns an empty list for ordinary text. Never raises for any ``str`` input.
        """
        found: list[Finding] = []
        scan_builtin(text, found)
        scan_extra(text, found)
        scan_spelled(text, found)
        scan_worded(text, found)
        for regex in self._custom:
            for m in regex.finditer(text):
                if m.end() > m.start():
                    found.append(Finding("secret", m.start(), m.end()))
        return _merge(found)

    def contains_sensitive(self, text: str) -> bool:
        """True if :meth:`find` would return at least one finding."""
        return bool(self.find(text))

    def redact(self, text: str) -> str:
        """``text`` with every finding replaced by its kind's placeholder (see module docstring).

        Repeats (at most a few passes) until no finding remains, so the result contains no
        built-in finding. Text without findings is returned unchanged.
        """
        for _ in range(_MAX_REDACT_PASSES):
            findings = self.find(text)
            if not findings:
                return text
            parts: list[str] = []
            pos = 0
            for f in findings:
                parts.append(text[pos : f.start])
                parts.append(PLACEHOLDERS.get(f.kind, "[secret]"))
                pos = f.end
            parts.append(text[pos:])
            text = "".join(parts)
        return text


#: Detector with the built-ins only, for callers without custom patterns.
DEFAULT_DETECTOR = SensitiveDetector()
