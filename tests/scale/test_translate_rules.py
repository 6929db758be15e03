"""Each rule of the DuckDB → ClickHouse translation gives DuckDB's answer where ClickHouse's own differs.

The parity tests ask the real questions of a real store; their data never holds a rounding tie, a
text that is not a number or a map without the key asked for, so a rule could go without one of
them failing. Here each rule meets the case it is for, on chdb and in-memory DuckDB side by side.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from loopsight import analytics
from loopsight.stores.duckdb_store import DuckDBReader
from loopsight.stores.translate import translate

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
    # lower() folds all of Unicode (ClickHouse's only ASCII: a search for "ÜBERPRÜFER" found nothing)
    "lower": (
        "SELECT lower(v) AS l, contains(lower(v), lower('ÜBERPRÜF')) AS found FROM (SELECT 'Überprüfer' AS v)",
        [{"l": "überprüfer", "found": True}],
    ),
    # time_bucket counts from its origin (ClickHouse's toStartOfInterval dropped it: week buckets began on
    # Mondays, not on the epoch's Thursdays), also for a time before it (toStartOfInterval failed)
    "time_bucket": (
        "SELECT time_bucket(INTERVAL (604800) SECOND, t, TIMESTAMP '1970-01-01') AS week, "
        "time_bucket(INTERVAL (25200) SECOND, t) AS seven_hours FROM "
        "(SELECT TIMESTAMP '2026-03-01 12:34:56' AS t UNION ALL SELECT TIMESTAMP '1970-01-01 00:00:01') ORDER BY t",
        [
            {"week": "1970-01-01T00:00:00.000000Z", "seven_hours": "1969-12-31T22:00:00.000000Z"},
            {"week": "2026-02-26T00:00:00.000000Z", "seven_hours": "2026-03-01T10:00:00.000000Z"},
        ],
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


# The questions whose translation materializes a CTE, through the analytics that ask them.
WITH_MATERIALIZED_CTES = {
    "runs": lambda con: analytics.list_runs(con, limit=100),
    "sessions": lambda con: analytics.sessions(con),
    "stalls": lambda con: analytics.stalls(con),
    "stall_counts": lambda con: analytics.stall_counts(con),
    "burn_runs": lambda con: analytics.burn_runs(con),
    "loops": lambda con: analytics.loops(con),
    "field_values": lambda con: analytics.field_values(con, "agent"),
    "budgets": lambda con: analytics.budgets(con),
}


@pytest.mark.parametrize("question", sorted(WITH_MATERIALIZED_CTES))
def test_a_server_without_materialized_ctes_gives_the_same_answers(clickhouse: Any, question: str) -> None:
    """ClickHouse before 26.3 (the compose file's 25.8) rejects ``WITH x AS MATERIALIZED`` and the
    ``enable_materialized_cte`` setting: the connection asks once and leaves both out there."""
    ask = WITH_MATERIALIZED_CTES[question]
    engine = clickhouse.cursor()._engine
    assert engine.materialized_ctes is None or engine.materialized_ctes  # chdb 26.9 has them
    materialized = ask(clickhouse)
    assert engine.materialized_ctes is True
    try:
        engine.materialized_ctes = False
        assert ask(clickhouse) == materialized
    finally:
        engine.materialized_ctes = True


def test_without_materialized_ctes_the_text_names_neither() -> None:
    sql = "WITH r AS (SELECT run_id FROM run_facts) SELECT count(*) AS n FROM r JOIN r AS s USING (run_id)"
    assert "MATERIALIZED" in translate(sql)[0] and "enable_materialized_cte" in translate(sql)[0]
    text = translate(sql, False)[0]
    assert "MATERIALIZED" not in text and "enable_materialized_cte" not in text
