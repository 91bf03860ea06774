"""Process logging set-up: ``text`` (human-readable) or ``json`` (one JSON object per line).

A JSON line holds ``ts`` (unix seconds), ``level``, ``logger``, ``msg``, ``request_id`` when the
record was logged while a request was being answered, and the record's structured ``fields``
(``logger.info("request", extra={"fields": {...}})``). The access line of the gateway
(:mod:`services.gateway.observe`) carries route, status, latency, tier and injected count, never
memory content or secrets.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from shared.metrics import CURRENT

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (see the module docstring for the keys)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as compact JSON; exceptions go into ``exc`` as formatted text."""
        line: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        current = CURRENT.get()
        if current is not None:
            line["request_id"] = current.request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def configure_logging(log_format: str, level: int = logging.INFO) -> None:
    """Install one stderr handler on the root logger, formatting ``json`` or ``text``.

    Handlers set earlier are replaced.
    """
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
