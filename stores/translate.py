"""DuckDB SQL to ClickHouse SQL: every question is written once, in DuckDB's dialect.

SQLGlot parses and writes the SQL; the rules below make ClickHouse give DuckDB's answers
(each measured on the whole question set, both engines side by side, in ``tests/scale``):

- *qualify*: every column reference resolved against the stored model
  (:mod:`loopsight.model`), ``*`` expanded, every output named. ClickHouse resolves a name to
  a SELECT alias before a column everywhere; qualified columns keep DuckDB's meaning.
- *placeholders*: ``$name`` becomes ``{name:Type}`` with the type of a cast beside it in the
  statement (``$agent::VARCHAR`` → ``{agent:Nullable(String)}``; none: ``Nullable(String)``,
  ``LIMIT $n``: ``UInt64``), so a question casts each parameter once; ``$xs::T[] IS NULL`` becomes
  ``{xs__is_null:Bool}`` (arrays are never Nullable in ClickHouse: ``None`` is sent as ``[]``
  with its NULL test beside it).
- *CTEs*: one read twice is ``MATERIALIZED`` where the server has it (26.3 and later): DuckDB
  computes it once; an older server recomputes it per read, slower, same answers.
- *types and functions*: ``TIMESTAMP`` keeps microseconds, ``lower`` folds all of Unicode, list/map/quantile
  functions get their ClickHouse names, ``time_bucket`` counts from its origin (also for a time before it),
  ``map['k']`` gives NULL as in DuckDB, ``round`` rounds ties away from zero.
- *settings*: outer-join misses are NULL, empty aggregates NULL, named tuples, UTC.

Example:
    >>> sql, arrays = translate("SELECT count(*) AS n FROM run_facts WHERE ($agent::VARCHAR IS NULL OR agent = $agent)")
    >>> "{agent: Nullable(String)}" in sql, arrays
    (True, frozenset())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from loopsight.model import TABLES

SETTINGS = {
    "join_use_nulls": 1,  # outer-join misses are NULL, not 0 / ''
    "enable_named_columns_in_function_tuple": 1,  # tuple(v AS k) is a named tuple (DuckDB struct)
    "aggregate_functions_null_for_empty": 1,  # sum()/max() of no rows is NULL, as in DuckDB
    "session_timezone": "UTC",
}
MATERIALIZED_CTE = {"enable_materialized_cte": 1}  # WITH x AS MATERIALIZED is computed once (ClickHouse 26.3+)


def _settings_sql(settings: dict[str, Any]) -> str:
    return " SETTINGS " + ", ".join(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in settings.items())


_SETTINGS_SQL = {True: _settings_sql(SETTINGS | MATERIALIZED_CTE), False: _settings_sql(SETTINGS)}
_SCHEMA = MappingSchema(
    {table: {c.name: c.type for c in columns} for table, columns in TABLES.items()}, dialect="duckdb", normalize=False
)
_IS_NULL = "__is_null"  # an array parameter's NULL test: arrays are never NULL in ClickHouse
_T = exp.DataType.Type
_TIMESTAMPS = (_T.TIMESTAMP, _T.TIMESTAMPTZ, _T.TIMESTAMPNTZ, _T.DATETIME)


@lru_cache(maxsize=512)
def translate(sql: str, materialize: bool = True) -> tuple[str, frozenset[str]]:
    """ClickHouse SQL for DuckDB ``sql`` and the names of its array parameters (send ``[]`` for None).

    ``materialize``: the server has materialized CTEs (26.3 and later); an older one recomputes a
    CTE at each read (the same answer, as the questions hold no row numbering of their own).
    Translating costs ~10-300 ms for a large question: the result is cached by text.
    """
    tree = _qualified(sqlglot.parse_one(sql, read="duckdb"))
    arrays = _placeholders(tree)
    _materialize_ctes(tree, materialize)
    _timestamps(tree)
    tree = _functions(tree)
    _filters_into_if(tree)
    _rounding(tree)
    return tree.sql(dialect="clickhouse") + _SETTINGS_SQL[materialize], frozenset(arrays)


def _qualified(tree: Any) -> exp.Expression:
    # Qualified as ClickHouse reads names (case-sensitive): DuckDB's are not, and qualifying in
    # its dialect would lower-case them (the SQL quotes "TraceId" consistently).
    tree = qualify(tree, schema=_SCHEMA, dialect="clickhouse", validate_qualify_columns=False, identify=False)
    return tree


_TIMES = {exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.TIMESTAMPTZ}
_TIME = exp.DataType.build("DateTime64(6, 'UTC')", dialect="clickhouse")  # DuckDB's microseconds, in UTC


def _spelled(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.DataType):
        node = _TIME.copy() if node.this in _TIMES else node
        node.set("nullable", False)  # the caller says whether the whole is Nullable; nothing inside is
    elif isinstance(node, exp.Identifier):
        node.set("quoted", False)  # a tuple's field names, bare as ClickHouse lists them
    return node


def clickhouse_type(duckdb_type: str | exp.DataType, *, nullable: bool = False) -> str:
    """The ClickHouse type holding a DuckDB type's values (lists, maps and structs are never Nullable there).

    Example:
        >>> clickhouse_type('STRUCT("t" TIMESTAMP, "n" VARCHAR)[]'), clickhouse_type("DOUBLE", nullable=True)
        ("Array(Tuple(t DateTime64(6, 'UTC'), n String))", 'Nullable(Float64)')
    """
    kind = exp.DataType.build(duckdb_type, dialect="duckdb", copy=True).transform(_spelled)
    kind.set("nullable", nullable and not kind.is_type(*exp.DataType.NESTED_TYPES))
    return kind.sql("clickhouse")


def _fn(name: str, *args: Any) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=[a for a in args if a is not None])


def _placeholders(tree: exp.Expression) -> set[str]:
    types: dict[str, exp.DataType] = {}
    for ph in tree.find_all(exp.Placeholder):
        if isinstance(ph.parent, exp.Cast):
            types.setdefault(ph.name, ph.parent.args["to"])
    arrays: set[str] = set()
    for ph in list(tree.find_all(exp.Placeholder)):
        declared = types.get(ph.name)
        kind = clickhouse_type(declared) if declared is not None else "String"
        if isinstance(ph.parent, (exp.Limit, exp.Offset)):
            kind = "UInt64"
        elif kind.startswith("Array("):
            arrays.add(ph.name)
        else:
            kind = f"Nullable({kind})"
        ph.set("kind", exp.DataType.build(kind, dialect="clickhouse"))
        if isinstance(ph.parent, exp.Cast):
            ph.parent.replace(ph)
    for node in list(tree.find_all(exp.Is)):
        if (
            isinstance(node.this, exp.Placeholder)
            and node.this.name in arrays
            and isinstance(node.expression, exp.Null)
        ):
            flag = exp.Placeholder(
                this=f"{node.this.name}{_IS_NULL}", kind=exp.DataType.build("Bool", dialect="clickhouse")
            )
            node.replace(flag)
    return arrays


def _materialize_ctes(tree: exp.Expression, materialize: bool) -> None:
    reads: dict[str, int] = {}
    for table in tree.find_all(exp.Table):
        if not table.db:
            reads[table.name] = reads.get(table.name, 0) + 1
    for cte in tree.find_all(exp.CTE):
        materialized = cte.args.get("materialized")
        if materialized is False or not materialize:
            cte.set("materialized", None)
        elif materialized is None and reads.get(cte.alias, 0) >= 2:
            cte.set("materialized", True)


def _timestamps(tree: exp.Expression) -> None:
    for cast in list(tree.find_all(exp.Cast)):
        if cast.args["to"].this in _TIMESTAMPS and not isinstance(cast, exp.TryCast):
            cast.set("to", exp.DataType.build("Nullable(DateTime64(6, 'UTC'))", dialect="clickhouse"))


def _not_null(value: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=value, expression=exp.Null()))


def _anonymous(name: str) -> Callable[[exp.Expression], bool]:
    return lambda n: isinstance(n, exp.Anonymous) and n.name.lower() == name


def _missing_key_null(n: exp.Expression) -> exp.Expression:
    inner = n.copy()
    inner.set("_translated", True)
    return exp.If(this=_fn("mapContains", n.this.copy(), n.expressions[0].copy()), true=inner, false=exp.Null())


_BUCKET_ORIGIN = _fn(
    "toDateTime64", exp.Literal.string("2000-01-03 00:00:00"), exp.Literal.number(6), exp.Literal.string("UTC")
)
_MICROS = {"SECOND": 10**6, "MINUTE": 60 * 10**6, "HOUR": 3600 * 10**6, "DAY": 86400 * 10**6}


def _time_bucket(n: exp.DateBin) -> exp.Expression:
    """DuckDB's ``time_bucket(width, ts[, origin])`` of a fixed width: the start of the bucket holding ``ts``,
    counted from ``origin`` (default 2000-01-03), also for a ``ts`` before it, as ``t - positiveModulo(t -
    origin, width)`` in microseconds (``toStartOfInterval`` counts from its own origin without one and fails
    on a time before the one given)."""
    origin = n.args.get("unit") or _BUCKET_ORIGIN  # SQLGlot reads DuckDB's third argument as the unit
    width = exp.Mul(this=exp.Paren(this=n.this.this.copy()), expression=exp.Literal.number(_MICROS[n.this.unit.name]))
    at = _fn("toUnixTimestamp64Micro", n.expression)
    offset = _fn("positiveModulo", exp.Sub(this=at, expression=_fn("toUnixTimestamp64Micro", origin.copy())), width)
    return _fn("fromUnixTimestamp64Micro", exp.Sub(this=at.copy(), expression=offset), exp.Literal.string("UTC"))


_FUNCTIONS: tuple[tuple[Callable[[exp.Expression], bool], Callable[[Any], exp.Expression]], ...] = (
    (lambda n: isinstance(n, exp.ArraySort) and not n.expression, lambda n: _fn("arraySort", n.this)),
    (lambda n: isinstance(n, exp.ArrayAgg), lambda n: _fn("groupArray", n.this)),
    (lambda n: isinstance(n, exp.Lower), lambda n: _fn("lowerUTF8", n.this)),  # lower() is ASCII only
    (
        lambda n: isinstance(n, exp.PercentileCont) and n.expression is not None,
        lambda n: exp.ParameterizedAgg(this="quantileExactInclusive", expressions=[n.expression], params=[n.this]),
    ),
    (lambda n: isinstance(n, exp.DateBin), _time_bucket),
    (_anonymous("map_values"), lambda n: _fn("mapValues", *n.expressions)),
    (lambda n: isinstance(n, exp.ArrayToString), lambda n: _fn("arrayStringConcat", n.this, n.expression)),
    (
        lambda n: isinstance(n, exp.Struct),
        lambda n: _fn(
            "tuple",
            *[
                exp.alias_(e.expression, e.this.name, quoted=True) if isinstance(e, exp.PropertyEQ) else e
                for e in n.expressions
            ],
        ),
    ),
    (
        lambda n: isinstance(n, exp.ToMap) and isinstance(n.this, exp.Struct) and not n.this.expressions,
        lambda n: _fn("map"),
    ),
    (
        _anonymous("histogram"),
        lambda n: _fn(
            "sumMapIf",
            _fn("map", _fn("assumeNotNull", n.expressions[0]), _fn("toUInt64", exp.Literal.number(1))),
            _not_null(n.expressions[0].copy()),
        ),
    ),
    (
        lambda n: isinstance(n, exp.TryCast),
        lambda n: _fn("accurateCastOrNull", n.this, exp.Literal.string(clickhouse_type(n.args["to"]))),
    ),
    (
        lambda n: (
            isinstance(n, exp.Bracket)
            and len(n.expressions) == 1
            and isinstance(n.expressions[0], exp.Literal)
            and n.expressions[0].is_string
            and not n.args.get("_translated")
        ),
        _missing_key_null,
    ),
)


def _functions(tree: exp.Expression) -> exp.Expression:
    def rewrite(node: exp.Expression) -> exp.Expression:
        for test, change in _FUNCTIONS:
            if test(node):
                return change(node)
        return node

    for _ in range(8):  # a rewritten node's arguments are not visited: again until nothing changes
        before = tree.sql("clickhouse")
        tree = tree.transform(rewrite)
        if tree.sql("clickhouse") == before:
            break
    return tree


def _filters_into_if(tree: exp.Expression) -> None:
    """``histogram(x) FILTER (WHERE c)`` → ``sumMapIf(map(x, 1), x IS NOT NULL AND c)``."""
    for node in list(tree.find_all(exp.Filter)):
        aggregate = node.this
        if isinstance(aggregate, exp.Anonymous) and aggregate.name == "sumMapIf":
            condition = node.expression.this if isinstance(node.expression, exp.Where) else node.expression
            aggregate.set("expressions", [aggregate.expressions[0], exp.and_(aggregate.expressions[1], condition)])
            node.replace(aggregate)


def _rounding(tree: exp.Expression) -> None:
    """DuckDB rounds ties away from zero, ClickHouse to even: ``sign(x) * floor(abs(x) * 10^n + 0.5) / 10^n``."""
    for node in list(tree.find_all(exp.Round)):
        digits = node.args.get("decimals")
        scale = (
            exp.Pow(this=exp.Literal.number(10), expression=digits.copy())
            if digits is not None
            else exp.Literal.number(1)
        )
        value = node.this.copy()
        scaled = exp.Mul(this=_fn("abs", value), expression=scale)
        node.replace(
            exp.Div(
                this=exp.Mul(
                    this=_fn("sign", value.copy()),
                    expression=_fn("floor", exp.Add(this=scaled, expression=exp.Literal.number(0.5))),
                ),
                expression=scale.copy(),
            )
        )


def parameters(params: Mapping[str, Any], arrays: frozenset[str]) -> dict[str, Any]:
    """Python values for a translated statement: a ``None`` array sent empty, with its NULL test beside it.

    Example:
        >>> from datetime import datetime
        >>> parameters({"ids": None, "at": datetime(2026, 1, 2)}, frozenset({"ids"}))
        {'ids': [], 'at': datetime.datetime(2026, 1, 2, 0, 0), 'ids__is_null': True}
    """
    values = {k: ([] if v is None and k in arrays else v) for k, v in params.items()}
    for name in arrays:
        values[f"{name}{_IS_NULL}"] = params.get(name) is None
    return values
