"""JSON numbers against typed structs: integral floats (``2.0``) accepted where an int is due.

JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) counts any number with a zero fractional
part as an ``integer``, and JSON itself has one number type, so a client (or a generator such as
schemathesis) may send ``2.0`` for an integer field. msgspec's strict decoding refuses it; the
API converts such values first, and leaves every other value for msgspec to validate.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
import msgspec.inspect

__all__ = ["int_fields", "integral_floats_to_int"]


@functools.cache
def int_fields(struct: type[msgspec.Struct]) -> frozenset[str]:
    """Names of the fields of ``struct`` whose type admits an ``int`` (alone or in a union)."""
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    names = set()
    for field in info.fields:
        kinds = (
            field.type.types if isinstance(field.type, msgspec.inspect.UnionType) else (field.type,)
        )
        if any(isinstance(k, msgspec.inspect.IntType) for k in kinds):
            names.add(field.encode_name)
    return frozenset(names)


def integral_floats_to_int(value: dict[str, Any], struct: type[msgspec.Struct]) -> dict[str, Any]:
    """``value`` with integral floats (``2.0``) of ``struct``'s integer fields made ``int``.

    JSON Schema counts ``2.0`` as an integer (draft 2020-12, "integer" matches any number with
    a zero fractional part), so a body the OpenAPI document allows must not be refused for it;
    msgspec's strict decoding would. Other values are left for msgspec to validate.
    """
    names = int_fields(struct)
    return {
        k: int(v) if k in names and isinstance(v, float) and v.is_integer() else v
        for k, v in value.items()
    }
