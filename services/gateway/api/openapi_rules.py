"""Rules the management API enforces that its msgspec structs alone cannot state.

They are written into the OpenAPI document so that it describes exactly what the server accepts.

* Admin token vs client key: the admin must name ``owner_id`` (non-empty) to create a memory,
  preview a search, summarize or forget by query, while a client key may omit it (it is its
  own owner). The document therefore comes in two variants,
  ``GET /api/openapi.json?for=admin`` and the default ``?for=client``.
* Bulk delete needs a filter, ``all: true`` or ``dry_run: true`` (an ``anyOf`` of the ways to
  satisfy it; ``owner_id`` counts only for the admin).
* ``PUT /api/settings`` takes exactly the runtime-editable fields, each nullable, with the type
  of :class:`shared.settings.Settings` and the range of
  :data:`shared.settings_checks.BOUNDS` (other numbers: finite and >= 0).
* Counts a client key may not see are ``null`` (``GET /api/engine``, stats).
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from shared.runtime_settings import IMMUTABLE_FIELDS
from shared.settings import Settings
from shared.settings_checks import BOUNDS

__all__ = [
    "VARIANTS",
    "VARIANT_PARAMETER",
    "apply_principal",
    "extra_errors",
    "settings_patch_schema",
]

VARIANTS = ("client", "admin")
"""Values of ``GET /api/openapi.json?for=``; ``client`` is the default."""

VARIANT_PARAMETER: dict[str, Any] = {
    "name": "for",
    "in": "query",
    "required": False,
    "description": "Whose rules the document states: a client key's (default) or the admin's.",
    "schema": {"type": "string", "enum": list(VARIANTS)},
}
"""The ``for`` query parameter of ``GET /api/openapi.json``."""

_OWNER_REQUIRED_FOR_ADMIN = ("MemoryCreate", "SearchPreview", "SummarizeRequest", "ForgetQuery")
_BULK_FILTERS = ("user_id", "session_id", "type", "category")
_NULLABLE_COUNTS = {"Engine": ("memories", "pending_reindex"), "Stats": ("pending_reindex",)}


def _non_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``null`` alternative (``anyOf: [X, null]`` → ``X``)."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    return copy.deepcopy(options[0]) if len(options) == 1 else {"anyOf": copy.deepcopy(options)}


def _bulk_delete_rule(schema: dict[str, Any], admin: bool) -> list[dict[str, Any]]:
    props = schema["properties"]
    names = (("owner_id",) if admin else ()) + _BULK_FILTERS
    rule = [{"required": [n], "properties": {n: _non_null(props[n])}} for n in names]
    rule.append({"required": ["q"], "properties": {"q": {"type": "string", "pattern": r"\S"}}})
    rule.append({"required": ["all"], "properties": {"all": {"const": True}}})
    rule.append({"required": ["dry_run"], "properties": {"dry_run": {"const": True}}})
    return rule


def apply_principal(schemas: dict[str, Any], admin: bool) -> dict[str, Any]:
    """A copy of the component ``schemas`` with one principal's rules applied.

    Args:
        schemas: the components (not modified).
        admin: the admin token's rules if True, else a client key's (see the module docstring).
    """
    out = copy.deepcopy(schemas)
    if admin:
        for name in _OWNER_REQUIRED_FOR_ADMIN:
            out[name]["properties"]["owner_id"] = {"type": "string", "minLength": 1}
            out[name]["required"] = sorted({*out[name].get("required", []), "owner_id"})
    out["BulkDelete"]["anyOf"] = _bulk_delete_rule(out["BulkDelete"], admin)
    for name, fields in _NULLABLE_COUNTS.items():
        for field in fields:
            out[name]["properties"][field] = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    return out


def extra_errors(path: str, method: str, has_body: bool) -> dict[str, tuple[str, str]]:
    """Error statuses of one operation beyond the common ones.

    413 and 408 with a body, 409 on a memory edit (the new key is taken). Values are
    (description, schema name).
    """
    out: dict[str, tuple[str, str]] = {}
    if has_body:
        out["413"] = ("The body exceeds MNEMOGATE_MAX_BODY_BYTES", "Error")
        out["408"] = ("The body did not arrive within MNEMOGATE_BODY_READ_TIMEOUT_S", "Error")
    if path == "/api/memory/{id}" and method == "patch":
        out["409"] = ("The new key is used by another memory of the owner", "Error")
    return out


def _field_schema(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    out.pop("default", None)
    if out.get("type") in ("integer", "number"):
        low, high = BOUNDS.get(name, (0, None))
        out["minimum"] = low
        if high is not None:
            out["maximum"] = high
    if name == "sensitive_custom_patterns":
        out["format"] = "regex"
        out["description"] = "One regular expression, or a JSON array of them (as a string)."
    return {"anyOf": [out, {"type": "null"}]}


def settings_patch_schema() -> dict[str, Any]:
    """The schema of a ``PUT /api/settings`` body.

    The runtime-editable fields, each nullable (``null`` = back to the environment value), no
    other property, ranges as :func:`shared.runtime_settings.apply_overrides` enforces them.
    """
    _, defs = msgspec.json.schema_components((Settings,))
    fields = defs["Settings"]["properties"]
    return {
        "type": "object",
        "description": "Partial settings: field → value (null = back to the environment value).",
        "properties": {
            name: _field_schema(name, schema)
            for name, schema in fields.items()
            if name not in IMMUTABLE_FIELDS
        },
        "additionalProperties": False,
    }
