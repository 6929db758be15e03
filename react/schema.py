"""A small JSON-schema validator for the subset tool schemas use.

Supported keywords: ``type`` (string or list), ``properties``, ``required``,
``additionalProperties`` (bool), ``enum``, ``const``, ``pattern``, ``minLength``,
``maxLength``, ``minimum``, ``maximum``, ``items``, ``minItems``, ``maxItems``.
Unknown keywords are ignored, as JSON Schema says. Keeping it here avoids a
runtime dependency for the loop.

Example:
    >>> schema = {"type": "object", "required": ["order_id"],
    ...           "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{6}$"}}}
    >>> validate({"order_id": "123456"}, schema)
    []
    >>> validate({"order_id": "一二三"}, schema)
    ["$.order_id: '一二三' does not match pattern '^[0-9]{6}$'"]
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list, tuple),
    "null": (type(None),),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    kinds = _TYPES.get(name)
    return True if kinds is None else isinstance(value, kinds)


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every violation of ``schema`` by ``value``, as ``path: message`` strings."""
    errors: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, n) for n in names):
            return [f"{path}: expected {' or '.join(names)}, got {_type_name(value)}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if isinstance(value, str):
        errors.extend(_check_string(value, schema, path))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is greater than {schema['maximum']}")
    if isinstance(value, dict):
        errors.extend(_check_object(value, schema, path))
    if isinstance(value, (list, tuple)):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: allows at most {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                errors.extend(validate(item, items, f"{path}[{i}]"))
    return errors


def _check_string(value: str, schema: dict[str, Any], path: str) -> list[str]:
    errors = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']} characters")
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        errors.append(f"{path}: {value!r} does not match pattern {pattern!r}")
    return errors


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
    errors = []
    props: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            errors.append(f"{path}: missing required property {name!r}")
    for name, item in value.items():
        if name in props:
            errors.extend(validate(item, props[name], f"{path}.{name}"))
        elif schema.get("additionalProperties") is False:
            errors.append(f"{path}: unexpected property {name!r}")
    return errors


def missing_required(value: Any, schema: dict[str, Any]) -> list[str]:
    """The required top-level properties absent from ``value`` (for the ``clarify`` fallback)."""
    if not isinstance(value, dict):
        return list(schema.get("required", []))
    return [name for name in schema.get("required", []) if name not in value]


def _type_name(value: Any) -> str:
    for name, kinds in _TYPES.items():
        if name not in ("integer", "number") and isinstance(value, kinds):
            return name
    if isinstance(value, bool):
        return "boolean"
    return "integer" if isinstance(value, int) else "number" if isinstance(value, float) else type(value).__name__
