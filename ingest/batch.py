"""Rows to an Arrow table shaped like the ``spans`` table (the hot path stays columnar).

:data:`SCHEMA` is the batch format every writer accepts (the DuckDB store and the
ClickHouse writer). Columns are built directly from the row tuples: one transpose, flat
key/value arrays for the maps, times converted from nanoseconds in Arrow.

Example:
    >>> to_arrow([]).num_rows
    0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from loopsight.ingest.normalize import SpanRow

ATTR_MAP = pa.map_(pa.string(), pa.string())
TS = pa.timestamp("us")
EVENT = pa.struct([("Timestamp", TS), ("Name", pa.string()), ("Attributes", ATTR_MAP)])
LINK = pa.struct(
    [("TraceId", pa.string()), ("SpanId", pa.string()), ("TraceState", pa.string()), ("Attributes", ATTR_MAP)]
)

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
        ("Events", pa.list_(EVENT)),
        ("Links", pa.list_(LINK)),
        ("span_type", pa.string()),
        ("operation", pa.string()),
        ("agent", pa.string()),
        ("run_id", pa.string()),
        ("step", pa.int32()),
        ("tool", pa.string()),
        ("args_hash", pa.string()),
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
        ("session_id", pa.string()),
        ("provider", pa.string()),
        ("cache_read_tokens", pa.int64()),
        ("cache_write_tokens", pa.int64()),
        ("result_hash", pa.string()),
        ("args_frame", pa.uint64()),
        ("args_text_fp", pa.uint64()),
        ("args_words", pa.list_(pa.uint64())),
        ("args_ents", pa.list_(pa.uint64())),
        ("args_vec", pa.list_(pa.int8())),
        ("args_vec_norm", pa.float32()),
    ]
)
COLUMNS = tuple(SCHEMA.names)
assert SpanRow._fields == COLUMNS, "batch.SCHEMA and normalize.SpanRow must list the same columns"

_TIME_COLUMNS = {"Timestamp", "end_time"}
_MAP_COLUMNS = {"ResourceAttributes", "SpanAttributes"}


def _times(nanos: Sequence[int]) -> pa.Array:
    return pc.divide(pa.array(nanos, pa.int64()), 1000).cast(TS)


def _zeros(n: int) -> pa.Array:
    return pa.repeat(pa.scalar(0, pa.int32()), n)


_EMPTY = {EVENT: pa.array([], EVENT), LINK: pa.array([], LINK)}


def _maps(dicts: Sequence[dict[str, str]]) -> pa.Array:
    if len(dicts) > 1 and dicts[0] is dicts[-1] and len(set(map(id, dicts))) == 1:  # one resource for every span
        return _maps(dicts[:1]).take(_zeros(len(dicts)))
    offsets = [0, *accumulate(map(len, dicts))]
    keys = list(chain.from_iterable(dicts))
    values = list(chain.from_iterable(map(dict.values, dicts)))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(values, pa.string())
    )


def _nested(lists: Sequence[list[tuple[Any, ...]]], struct: pa.StructType) -> pa.Array:
    if not any(lists):  # most spans have no events and no links
        return pa.ListArray.from_arrays(_zeros(len(lists) + 1), _EMPTY[struct])
    offsets = [0, *accumulate(map(len, lists))]
    items: list[tuple[Any, ...]] = list(chain.from_iterable(lists))
    columns = list(zip(*items, strict=False))
    children = []
    for field, values in zip(struct, columns, strict=False):
        if field.type == TS:
            children.append(_times(values))
        elif field.type == ATTR_MAP:
            children.append(_maps(values))
        else:
            children.append(pa.array(values, field.type))
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.StructArray.from_arrays(children, fields=list(struct))
    )


def to_arrow(rows: Iterable[SpanRow]) -> pa.Table:
    """Build the Arrow table for normalized rows, one column at a time."""
    rows = list(rows)
    if not rows:
        return SCHEMA.empty_table()
    arrays = []
    for field, values in zip(SCHEMA, zip(*rows, strict=False), strict=False):
        name = field.name
        if name in _TIME_COLUMNS:
            arrays.append(_times(values))
        elif name in _MAP_COLUMNS:
            arrays.append(_maps(values))
        elif name == "Events":
            arrays.append(_nested(values, EVENT))
        elif name == "Links":
            arrays.append(_nested(values, LINK))
        else:
            arrays.append(pa.array(values, field.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def unique_spans(table: pa.Table) -> pa.Table:
    """Drop repeats of the same (TraceId, SpanId) inside one batch (first one wins)."""
    keys = pc.binary_join_element_wise(table.column("TraceId"), table.column("SpanId"), "")
    if pc.count_distinct(keys).as_py() == table.num_rows:
        return table
    seen: set[str] = set()
    mask = []
    for key in keys.to_pylist():
        mask.append(key not in seen)
        seen.add(key)
    return table.filter(pa.array(mask))
