"""Each rule of the DuckDB → ClickHouse translation gives DuckDB's answer where ClickHouse's own differs.

The parity tests ask the real questions of a real store; their data never holds a rounding tie, a
text that is not a number or a map without the key asked for, so a rule could go without one of
them failing. Here each rule meets the case it is for, on chdb and in-memory DuckDB side by side.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from loopsight.stores.duckdb_store import DuckDBReader

CASES = {
    # DuckDB rounds ties away from zero, ClickHouse's round to even (0.12, -2.0)
    "round": (
        "SELECT round(x, 2) AS r, round(-x * 20) AS s FROM (SELECT CAST(1 AS DOUBLE) / 8 AS x)",
        [{"r": 0.13, "s": -3.0}],
    ),
    # a text that is not a number is NULL, not an error
    "try_cast": (
        "SELECT TRY_CAST(v AS BIGINT) AS n FROM (SELECT 'twelve' AS v UNION ALL SELECT '12' AS v) ORDER BY n",
        [{"n": 12}, {"n": None}],
    ),
    # a key the map lacks is NULL, not ''
    "map_key": ("SELECT m['b'] AS v, m['a'] AS w FROM (SELECT MAP(['a'], ['x']) AS m)", [{"v": None, "w": "x"}]),
    # an aggregate's FILTER over histogram (ClickHouse's sumMapIf: its condition and the FILTER's in one)
    "histogram_filter": (
        "SELECT histogram(k) FILTER (WHERE ok) AS h FROM "
        "(SELECT 'a' AS k, true AS ok UNION ALL SELECT 'b', false UNION ALL SELECT 'a', true)",
        [{"h": {"a": 2}}],
    ),
    "lists": (
        "SELECT list_sort(list(k)) AS ks, array_to_string(list_sort(list(k)), ',') AS s "
        "FROM (SELECT 'b' AS k UNION ALL SELECT 'a')",
        [{"ks": ["a", "b"], "s": "a,b"}],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_rule_gives_duckdbs_answer(clickhouse: Any, case: str) -> None:
    sql, expected = CASES[case]
    assert DuckDBReader(duckdb.connect()).rows(sql) == expected
    assert clickhouse.rows(sql) == expected
