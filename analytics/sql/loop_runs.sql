-- Runs started in [$since, $until) that hold a span the loop guard marked (loop_kind set).
SELECT count(*) AS runs
FROM spans r
WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
  AND r."Timestamp" >= $since AND r."Timestamp" < $until
  AND ($agent::VARCHAR IS NULL OR r.agent = $agent)
  AND ($service::VARCHAR IS NULL OR r."ServiceName" = $service)
  AND EXISTS (
      SELECT 1 FROM spans s
      WHERE s."TraceId" = r."TraceId" AND s.run_id = r."SpanId" AND s.loop_kind IS NOT NULL)
