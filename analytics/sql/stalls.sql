-- ctes: found=stalls_found
-- /api/v1/stalls: slow calls, retry backoff, idle gaps and stuck runs (rules in docs/detection.md),
-- stuck first, then newest.
SELECT trace_id, run_id, span_id, kind, tool, round(duration_ms, 3) AS duration_ms, round(expected_ms, 3) AS expected_ms,
       agent, started_at
FROM found
WHERE $kind::VARCHAR IS NULL OR kind = $kind
ORDER BY kind = 'stuck' DESC, started_at DESC, trace_id, duration_ms DESC, run_id, span_id, kind
LIMIT $limit
