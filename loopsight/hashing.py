"""Canonical JSON of tool arguments and its short hash (``loopsight.tool.args_hash``).

Canonical: keys sorted, no whitespace, UTF-8 (``ensure_ascii=False``). Values JSON cannot
hold are converted first: dataclasses and pydantic models to dicts, sets to sorted lists,
bytes to hex (over :data:`MAX_HEX_BYTES`, their length and SHA-256), dates and times to
ISO-8601, anything else to its ``repr``. It never raises.

Example:
    >>> args_hash({"b": 1, "a": "é"}) == args_hash({"a": "é", "b": 1})
    True
    >>> len(args_hash({"q": "weather"}))
    16
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import hashlib
import json
import re
import uuid
from decimal import Decimal
from pathlib import PurePath
from typing import Any

_MAX_DEPTH = 64
_sha256 = hashlib.sha256


def _default(obj: Any) -> Any:
    """JSON fallback for values json cannot encode natively."""
    if isinstance(obj, (set, frozenset)):
        return sorted((_normalize(v, 0) for v in obj), key=_sort_key)
    return _convert(obj, 0)


def _convert(obj: Any, depth: int) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _normalize(getattr(obj, f.name, None), depth + 1) for f in dataclasses.fields(obj)}
    dump = getattr(obj, "model_dump", None)  # pydantic v2
    if dump is not None and callable(dump) and not isinstance(obj, type):
        try:
            return _normalize(dump(mode="json"), depth + 1)
        except Exception:
            pass
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _bytes_text(obj)
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, _dt.timedelta):
        return obj.total_seconds()
    if isinstance(obj, enum.Enum):
        return _normalize(obj.value, depth + 1)
    if isinstance(obj, (Decimal, uuid.UUID, PurePath)):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted((_normalize(v, depth + 1) for v in obj), key=_sort_key)
    if isinstance(obj, (list, tuple)):
        return [_normalize(v, depth + 1) for v in obj]
    if isinstance(obj, dict):
        return {_key(k): _normalize(v, depth + 1) for k, v in obj.items()}
    return _safe_repr(obj)


MAX_HEX_BYTES = 64 * 1024
"""Bytes up to this size are written as hex; longer ones by their length and SHA-256 (a 200 MB
upload written as hex cost 10.7 s and 800 MiB of memory on every call: docs/performance.md)."""


def _bytes_text(obj: bytes | bytearray | memoryview) -> str:
    raw = obj if isinstance(obj, (bytes, bytearray)) else obj.tobytes()
    if len(raw) <= MAX_HEX_BYTES:
        return bytes(raw).hex()
    return f"<{len(raw)} bytes, sha256 {_sha256(raw).hexdigest()}>"


def _normalize(obj: Any, depth: int) -> Any:
    """A JSON-native equivalent of ``obj`` (str keys only, no exotic values)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        if isinstance(obj, enum.Enum):
            return _normalize(obj.value, depth + 1)
        return obj
    if depth > _MAX_DEPTH:
        return _safe_repr(obj)
    if type(obj) is dict:
        return {_key(k): _normalize(v, depth + 1) for k, v in obj.items()}
    if type(obj) in (list, tuple):
        return [_normalize(v, depth + 1) for v in obj]
    return _convert(obj, depth)


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, (bool, int, float)):
        return json.dumps(k)
    return _safe_repr(k) if not isinstance(k, enum.Enum) else str(k.value)


def _sort_key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_safe_repr)


_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


def _safe_repr(obj: Any) -> str:
    # Memory addresses would make the hash differ per call and per process.
    try:
        return _ADDRESS.sub("", repr(obj))
    except Exception:
        return f"<{type(obj).__qualname__}>"


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)
_SAFE_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_safe_repr)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``; never raises.

    Example:
        >>> canonical_json({"b": [1, 2.5], "a": {"z", "y"}})
        '{"a":["y","z"],"b":[1,2.5]}'
    """
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        # Non-string keys mixed with strings, circular structures, ...: normalise first.
        pass
    try:
        return _SAFE_ENCODER.encode(_normalize(value, 0))
    except Exception:
        return json.dumps(_safe_repr(value), ensure_ascii=False)


def args_hash(args: Any) -> str:
    """First 16 lower-case hex chars of sha256 over the canonical JSON of ``args``.

    Example:
        >>> args_hash({"q": "x"})
        'a69fbbcf7209c6f6'
    """
    try:
        text = _ENCODER.encode(args)
    except (TypeError, ValueError, RecursionError):
        text = canonical_json(args)
    return _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
