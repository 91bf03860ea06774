"""Hand-written component schemas of the management API's OpenAPI document.

Responses built from plain dicts (errors, counts, stats, engine status, settings view), not from
msgspec structs.
"""

from __future__ import annotations

from typing import Any

REF = "#/components/schemas/{name}"
"""``$ref`` template of a component schema."""

OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
EXTRA_SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "code"],
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "code": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            }
        },
    },
    "Deleted": {
        "type": "object",
        "required": ["deleted"],
        "properties": {"deleted": {"$ref": REF.format(name="MemoryView")}},
    },
    "BulkDeleteResult": {
        "type": "object",
        "required": ["matched", "deleted", "dry_run"],
        "properties": {
            "matched": {"type": "integer"},
            "deleted": {"type": "integer"},
            "dry_run": {"type": "boolean"},
        },
    },
    "ImportResult": {
        "type": "object",
        "required": ["written", "skipped", "lines"],
        "properties": {
            "written": {"type": "integer"},
            "skipped": {"type": "integer"},
            "lines": {"type": "integer"},
        },
    },
    "Stats": {
        "type": "object",
        "required": ["by_type", "by_category", "total", "tokens_stored", "events"],
        "properties": {
            "owner_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "days": {"type": "integer"},
            "by_type": {"type": "object", "additionalProperties": {"type": "integer"}},
            "by_category": {"type": "object", "additionalProperties": {"type": "integer"}},
            "total": {"type": "integer"},
            "tokens_stored": {"type": "integer"},
            "pending_reindex": {"type": "integer"},
            "events": {"type": "object", "additionalProperties": {"type": "integer"}},
            "events_by_day": {"type": "array", "items": OBJECT},
        },
    },
    "Engine": {
        "type": "object",
        "required": ["keyword", "embedding", "vector", "qdrant", "pending_reindex"],
        "properties": {
            "keyword": OBJECT,
            "embedding": OBJECT,
            "vector": OBJECT,
            "qdrant": OBJECT,
            "retrieval_strategy": {"type": "string"},
            "memories": {"type": "integer"},
            "pending_reindex": {"type": "integer"},
        },
    },
    "SettingsView": {
        "type": "object",
        "required": ["version", "settings", "overrides", "immutable", "secret", "refresh_s"],
        "properties": {
            "version": {"type": "integer"},
            "updated_at": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "settings": OBJECT,
            "overrides": OBJECT,
            "immutable": {"type": "array", "items": {"type": "string"}},
            "secret": {"type": "array", "items": {"type": "string"}},
            "refresh_s": {"type": "number"},
        },
    },
}
