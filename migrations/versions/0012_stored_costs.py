"""run_calls, run_facts: costs stored when derived (issue 23's fix 1)

Revision ID: 0012
Revises: 0011

A model call is priced when it is derived, no longer when it is read: ``run_calls`` gains each
call's ``priced``, ``cost_usd`` and ``cache_saved_usd``, ``run_facts`` each run's sums
(``cost_usd``, ``cache_saved_usd``, ``unpriced_calls``). The writer prices them again when its
prices change (``loopsight.stores.derive.reprice``). The stored calls are priced here against the
stored ``model_prices``, by the rules of ``loopsight.vocabulary`` (as
``stores/sql/call_costs.sql``), so the file answers as before without a derive pass.
"""

from alembic import op

from loopsight.vocabulary import CACHE_SAVING, CALL_COST, PRICE_OF_CALL

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for column, kind in (("priced", "BOOLEAN"), ("cost_usd", "DOUBLE"), ("cache_saved_usd", "DOUBLE")):
        op.execute(f"ALTER TABLE run_calls ADD COLUMN {column} {kind}")
    for column, kind in (("cost_usd", "DOUBLE"), ("cache_saved_usd", "DOUBLE"), ("unpriced_calls", "BIGINT")):
        op.execute(f"ALTER TABLE run_facts ADD COLUMN {column} {kind}")
    op.execute(
        f"""
        UPDATE run_calls SET priced = r.priced, cost_usd = r.cost_usd, cache_saved_usd = r.cache_saved_usd
        FROM (
            SELECT DISTINCT c.trace_id, c.run_id, c.started_at, c.span_id, p.input_mtok IS NOT NULL AS priced,
                   {CALL_COST.sql} AS cost_usd, {CACHE_SAVING.sql} AS cache_saved_usd
            FROM run_calls c
            LEFT JOIN model_prices p ON p.provider = c.provider AND p.model = c.model AND {PRICE_OF_CALL.sql}
        ) r
        WHERE run_calls.started_at = r.started_at AND run_calls.trace_id = r.trace_id
          AND run_calls.run_id = r.run_id AND run_calls.span_id = r.span_id
        """
    )
    op.execute("UPDATE run_facts SET unpriced_calls = 0")
    op.execute(
        """
        UPDATE run_facts SET cost_usd = k.cost_usd, cache_saved_usd = k.cache_saved_usd, unpriced_calls = k.unpriced_calls
        FROM (
            SELECT trace_id, run_id, sum(cost_usd) AS cost_usd, sum(cache_saved_usd) AS cache_saved_usd,
                   count(*) FILTER (WHERE NOT priced) AS unpriced_calls
            FROM run_calls GROUP BY trace_id, run_id
        ) k
        WHERE run_facts.trace_id = k.trace_id AND run_facts.run_id = k.run_id
        """
    )


def downgrade() -> None:
    for column in ("unpriced_calls", "cache_saved_usd", "cost_usd"):
        op.execute(f"ALTER TABLE run_facts DROP COLUMN {column}")
    for column in ("cache_saved_usd", "cost_usd", "priced"):
        op.execute(f"ALTER TABLE run_calls DROP COLUMN {column}")
