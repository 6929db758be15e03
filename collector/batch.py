"""Rows to an Arrow table shaped like the ``spans`` table (the hot path stays columnar).

Example:
    >>> to_arrow([]).num_rows
    0
"""

from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa

ATTR_MAP = pa.map_(pa.string(), pa.string())
TS = pa.timestamp("us")

SCHEMA = pa.schema(
    [
        ("Timestamp", TS),
        ("TraceId", pa.string()),
        ("SpanId", pa.string()),
        ("ParentSpanId", pa.string()),
        ("TraceState", pa.string()),
        ("SpanName", pa.string()),
        ("SpanKind", pa.string()),
        ("ServiceName", pa.string()),
        ("ResourceAttributes", ATTR_MAP),
        ("ScopeName", pa.string()),
        ("ScopeVersion", pa.string()),
        ("SpanAttributes", ATTR_MAP),
        ("Duration", pa.int64()),
        ("StatusCode", pa.string()),
        ("StatusMessage", pa.string()),
        (
            "Events",
            pa.list_(pa.struct([("Timestamp", TS), ("Name", pa.string()), ("Attributes", ATTR_MAP)])),
        ),
        (
            "Links",
            pa.list_(
                pa.struct(
                    [("TraceId", pa.string()), ("SpanId", pa.string()), ("TraceState", pa.string()), ("Attributes", ATTR_MAP)]
                )
            ),
        ),
        ("span_type", pa.string()),
        ("operation", pa.string()),
        ("agent", pa.string()),
        ("run_id", pa.string()),
        ("step", pa.int32()),
        ("tool", pa.string()),
        ("args_hash", pa.string()),
        ("args_sketch", pa.uint64()),
        ("model", pa.string()),
        ("error_type", pa.string()),
        ("error_class", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("termination_reason", pa.string()),
        ("fallback", pa.string()),
        ("loop_kind", pa.string()),
        ("attempts", pa.int32()),
        ("end_time", TS),
    ]
)
COLUMNS = tuple(SCHEMA.names)
_MAP_COLUMNS = {"ResourceAttributes", "SpanAttributes"}


def to_arrow(rows: Iterable[dict[str, Any]]) -> pa.Table:
    """Build the Arrow table for a list of normalized rows, one column at a time."""
    rows = list(rows)
    arrays = []
    for field in SCHEMA:
        values = [row[field.name] for row in rows]
        if field.name in _MAP_COLUMNS:
            values = [list(v.items()) for v in values]
        elif field.name in ("Events", "Links"):
            values = [[{**item, "Attributes": list(item["Attributes"].items())} for item in v] for v in values]
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)
