"""The stored model is written once (loopsight.model): the migrated DuckDB file holds exactly it."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from loopsight.migrations import upgrade
from loopsight.model import ALERT_TABLES, TABLES, duckdb_ddl
from loopsight.stores.translate import clickhouse_type


def _normalized(kind: str) -> str:
    return kind.replace('"', "")


def test_the_migrations_make_the_model(tmp_path: Path) -> None:
    path = str(tmp_path / "m.duckdb")
    upgrade(path)
    con = duckdb.connect(path, read_only=True)
    try:
        for table, columns in {**TABLES, **ALERT_TABLES}.items():
            found = con.execute(
                "SELECT column_name, data_type, is_nullable = 'YES', column_default FROM information_schema.columns "
                "WHERE table_name = $t ORDER BY ordinal_position",
                {"t": table},
            ).fetchall()
            expected = [(c.name, _normalized(c.type), c.nullable, c.default) for c in columns]
            assert [(n, _normalized(t), nullable, d) for n, t, nullable, d in found] == expected, table
    finally:
        con.close()


def test_the_rendered_tables_hold_the_same_columns() -> None:
    scratch = duckdb.connect()
    for table, columns in TABLES.items():
        scratch.execute(duckdb_ddl(table))
        assert [r[0] for r in scratch.execute(f"DESCRIBE {table}").fetchall()] == [c.name for c in columns]
    assert clickhouse_type('STRUCT("a" BIGINT, "b" VARCHAR[])[]') == "Array(Tuple(a Int64, b Array(String)))"
    assert clickhouse_type("DOUBLE", nullable=True) == "Nullable(Float64)"


@pytest.mark.parametrize(
    ("cast", "expected"),
    [
        ("INTEGER", "Int32"),
        ("FLOAT", "Float32"),
        ("SMALLINT", "Int16"),
        ("DATE", "DATE"),  # SQLGlot's spelling, which ClickHouse reads as Date
        ("VARCHAR[]", "Array(String)"),
    ],
)
def test_a_cast_in_a_question_gets_its_clickhouse_type(cast: str, expected: str) -> None:
    """A cast's type reaches clickhouse_type as SQLGlot spells it for DuckDB (INTEGER as INT, FLOAT as REAL)."""
    from loopsight.stores.translate import translate

    assert (
        f"accurateCastOrNull(_0.x, '{expected}')"
        in translate(f"SELECT TRY_CAST(x AS {cast}) AS y FROM (SELECT 1 AS x)")[0]
    )
