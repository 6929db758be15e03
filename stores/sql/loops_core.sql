-- ctes: runs=loop_runs
-- Every loop of every call sequence in scope (the definitions are docs/detection.md), one row per
-- loop. A sequence is the calls of one run (runs = loop_runs.sql) or of one session's runs in start
-- order (runs = loop_session_runs.sql): rk, the runs' key, groups them. A session loop is kept only
-- when its calls span two runs or more (the rest is each run's own), and is reported on the run of
-- its last call. Parameters: since, until, agent, service (run filters, run scope); cos_min,
-- word_min, max_sub, cross, long_words, long_jaccard (the near test, loopsight.ingest.features).
WITH work AS MATERIALIZED (
    SELECT row_number() OVER () AS wid, r.rk, hash(s."TraceId", s.run_id) AS run_key, r.scope, r.session_id,
           s."TraceId" AS trace_id, s.run_id, s."SpanId" AS span_id, s."Timestamp" AS ts,
           s.span_type, s.step, s.tool, s.args_hash, s.error_type, s.loop_kind, s.result_hash,
           s.args_frame, s.args_text_fp, s.args_words, s.args_ents,
           -- a list is never NULL on ClickHouse: an empty one is no vector
           CASE WHEN len(s.args_vec) > 0 THEN s.args_vec END AS args_vec, s.args_vec_norm,
           s.input_tokens, s.output_tokens
    FROM spans s
    JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
    -- a run's spans start with it: the bound prunes the scan of a whole store (a session's runs)
    WHERE s.span_type IN ('llm', 'tool') AND s."Timestamp" >= (SELECT min(started_at) FROM runs)
),
unnumbered AS (
    -- producers that give no step: the step is the number of model calls begun before (only
    -- the runs with such calls are numbered)
    SELECT run_key, span_id, ts,
           sum(CASE WHEN span_type = 'llm' THEN 1 ELSE 0 END)
               OVER (PARTITION BY run_key ORDER BY ts, span_id ROWS UNBOUNDED PRECEDING) - 1 AS llm_seen
    FROM work
    WHERE run_key IN (SELECT run_key FROM work WHERE span_type = 'tool' AND step IS NULL)
),
-- The windows below run over one ordering of all sequences (a window partitioned by sequence sorts
-- each of thousands of tiny partitions on its own, about twice as slow): seq numbers the calls
-- sequence after sequence, and a lag (or lead) counts only when the row it reads has the same key.
calls AS MATERIALIZED (
    SELECT *,
           row_number() OVER r AS seq,
           CASE WHEN lag(rk, 1) OVER r = rk THEN lag(call_key, 1) OVER r END AS k1,
           CASE WHEN lag(rk, 2) OVER r = rk THEN lag(call_key, 2) OVER r END AS k2,
           CASE WHEN lag(rk, 3) OVER r = rk THEN lag(call_key, 3) OVER r END AS k3,
           CASE WHEN lag(rk, 4) OVER r = rk THEN lag(call_key, 4) OVER r END AS k4,
           CASE WHEN lag(rk, 5) OVER r = rk THEN lag(call_key, 5) OVER r END AS k5,
           CASE WHEN lag(rk, 1) OVER r = rk THEN lag(tool, 1) OVER r END AS t1,
           CASE WHEN lag(rk, 2) OVER r = rk THEN lag(tool, 2) OVER r END AS t2
    FROM (
        -- the argument features stay in work (wid): the windows below sort narrow rows
        SELECT w.* EXCLUDE (step, args_text_fp, args_words, args_ents, args_vec, args_vec_norm), hash(tool) AS tk,
               coalesce(w.step, greatest(u.llm_seen, 0)) AS step,
               -- compared by its argument features (the guard's own semantic record is not)
               w.args_frame IS NOT NULL AND w.loop_kind IS DISTINCT FROM 'semantic' AS featured,
               -- a call without an args hash never equals another call
               hash(tool, coalesce(args_hash, '#' || w.span_id)) AS call_key
        FROM work w
        LEFT JOIN unnumbered u ON u.run_key = w.run_key AND u.span_id = w.span_id AND u.ts = w.ts
        WHERE w.span_type = 'tool'
    )
    WINDOW r AS (ORDER BY rk, ts, span_id)
),
lagged AS MATERIALIZED (
    SELECT *,
           row_number() OVER t AS tool_seq,
           -- where a tool's unbroken run of one error type begins and ends
           error_type IS NOT NULL AND (lag(rk) OVER t IS DISTINCT FROM rk OR lag(tk) OVER t IS DISTINCT FROM tk
                                       OR lag(error_type) OVER t IS DISTINCT FROM error_type) AS error_begins,
           error_type IS NOT NULL AND (lead(rk) OVER t IS DISTINCT FROM rk OR lead(tk) OVER t IS DISTINCT FROM tk
                                       OR lead(error_type) OVER t IS DISTINCT FROM error_type) AS error_ends,
           -- where a tool's unbroken run of one successful result begins (no_progress)
           result_hash IS NOT NULL AND error_type IS NULL
               AND (lag(rk) OVER t IS DISTINCT FROM rk OR lag(tk) OVER t IS DISTINCT FROM tk
                    OR lag(result_hash) OVER t IS DISTINCT FROM result_hash OR lag(error_type) OVER t IS NOT NULL)
               AS result_begins,
           CASE WHEN lag(rk) OVER t = rk AND lag(tk) OVER t = tk THEN lag(seq) OVER t END AS prev_seq,
           CASE WHEN lag(rk, 2) OVER t = rk AND lag(tk, 2) OVER t = tk THEN lag(seq, 2) OVER t END AS prev2_seq
    FROM calls
    WINDOW t AS (ORDER BY rk, tk, seq)
),
exact AS (
    -- counted on integers first; the loop's first call (least seq, also earliest) gives the rest
    SELECT rk, 'exact' AS kind, any_value(tool) AS tool, any_value(args_hash) AS args_hash, count(*) AS count,
           min(seq) AS first_seq, max(seq) AS last_seq,
           count(result_hash) = count(*) AND min(result_hash) = max(result_hash) AS no_progress
    FROM calls
    WHERE args_hash IS NOT NULL
    GROUP BY rk, call_key
    HAVING count(*) >= 3
),
osc_hits AS (
    SELECT rk, seq, seq - 3 AS start_seq,
           list_sort([call_key, k1]) AS cycle,
           array_to_string(list_sort(list_distinct([tool, t1])), ',') AS tools
    FROM lagged
    WHERE call_key = k2 AND k1 = k3 AND call_key <> k1
    UNION ALL
    SELECT rk, seq, seq - 5,
           list_sort([call_key, k1, k2]),
           array_to_string(list_sort(list_distinct([tool, t1, t2])), ',')
    FROM lagged
    WHERE call_key = k3 AND k1 = k4 AND k2 = k5 AND call_key <> k1 AND k1 <> k2 AND call_key <> k2
),
oscillation AS (
    SELECT rk, 'oscillation' AS kind, any_value(tools) AS tool, NULL::VARCHAR AS args_hash,
           max(seq) - min(start_seq) + 1 AS count, min(start_seq) AS first_seq, max(seq) AS last_seq,
           NULL::BOOLEAN AS no_progress
    FROM osc_hits
    GROUP BY rk, cycle
),
repeated_error AS (
    -- an error run's first and last calls: the run's count and first call
    SELECT rk, 'repeated_error' AS kind, tool, NULL::VARCHAR AS args_hash, count, first_seq, seq AS last_seq,
           NULL::BOOLEAN AS no_progress
    FROM (
        SELECT rk, tool, seq, error_ends,
               CASE WHEN error_begins THEN 1 ELSE tool_seq - lag(tool_seq) OVER e + 1 END AS count,
               CASE WHEN error_begins THEN seq ELSE lag(seq) OVER e END AS first_seq
        FROM lagged
        WHERE error_begins OR error_ends
        WINDOW e AS (ORDER BY tool_seq)
    )
    WHERE error_ends AND count >= 3
),
-- The near test (docs/detection.md) between each call and the previous call of its tool, and the
-- one before it: one row per pair, a_ the call, b_ the earlier one.
pairs AS (
    -- only a pair of different arguments with the same frame can be near: the rest never reads the features
    SELECT c.seq, a.args_text_fp AS a_text_fp, a.args_words AS a_words, a.args_ents AS a_ents,
           a.args_vec AS a_vec, a.args_vec_norm AS a_norm,
           b.args_text_fp AS b_text_fp, b.args_words AS b_words, b.args_ents AS b_ents,
           b.args_vec AS b_vec, b.args_vec_norm AS b_norm
    FROM (
        SELECT l.seq, l.wid AS a_wid, p.wid AS b_wid
        FROM (
            SELECT seq, prev_seq AS earlier, wid, args_hash, args_frame FROM lagged
            WHERE prev_seq IS NOT NULL AND featured
            UNION ALL
            SELECT seq, prev2_seq, wid, args_hash, args_frame FROM lagged
            WHERE prev2_seq IS NOT NULL AND featured
        ) l
        JOIN calls p ON p.seq = l.earlier
        WHERE l.args_hash <> p.args_hash AND l.args_frame <> 0 AND l.args_frame = p.args_frame
    ) c
    JOIN work a ON a.wid = c.a_wid
    JOIN work b ON b.wid = c.b_wid
),
pair_words AS (
    SELECT *,
           len(list_intersect(a_words, b_words)) AS shared,
           -- positions (1-based) of the words only one side has
           list_filter(range(1, len(a_words) + 1), lambda i: NOT list_contains(b_words, a_words[i])) AS pa,
           list_filter(range(1, len(b_words) + 1), lambda i: NOT list_contains(a_words, b_words[i])) AS pb,
           CASE WHEN a_vec IS NOT NULL AND b_vec IS NOT NULL
                THEN list_cosine_similarity(a_vec::FLOAT[], b_vec::FLOAT[]) END AS cos
    FROM pairs
),
pair_blocks AS (
    SELECT *, len(pa) AS only_a, len(pb) AS only_b,
           len(pa) + len(pa) * (len(pa) - 1) * $cross AS da2,
           len(pb) + len(pb) * (len(pb) - 1) * $cross AS db2,
           -- a substitution in place: one block each side, the same word (or the start / end) beside it
           len(pa) > 0 AND len(pb) > 0
           AND pa[-1] - pa[1] + 1 = len(pa) AND pb[-1] - pb[1] + 1 = len(pb)
           AND ((CASE WHEN pa[1] > 1 THEN a_words[pa[1] - 1] END)
                    IS NOT DISTINCT FROM (CASE WHEN pb[1] > 1 THEN b_words[pb[1] - 1] END)
                OR (CASE WHEN pa[-1] < len(a_words) THEN a_words[pa[-1] + 1] END)
                    IS NOT DISTINCT FROM (CASE WHEN pb[-1] < len(b_words) THEN b_words[pb[-1] + 1] END)) AS in_place
    FROM pair_words
),
near AS (
    SELECT seq, bool_or(coalesce(
        CASE
            WHEN a_text_fp IS NULL OR b_text_fp IS NULL THEN a_text_fp IS NULL AND b_text_fp IS NULL
            WHEN a_text_fp = b_text_fp THEN true
            WHEN len(a_words) = 0 OR len(b_words) = 0 THEN false
            -- the identifier guard: a name, number or code one side has and the other lacks
            WHEN NOT (list_has_all(b_words, a_ents) AND list_has_all(a_words, b_ents)) THEN false
            WHEN only_a = 0 AND only_b = 0 THEN true
            WHEN cos IS NULL THEN (only_a = 0 AND only_b = 1) OR (only_a = 1 AND only_b = 0)
            WHEN cos < $cos_min THEN false
            WHEN greatest(len(a_words), len(b_words)) >= $long_words
                 AND shared < $long_jaccard * (len(a_words) + len(b_words) - shared) THEN false
            -- the differing-words guard: words swapped in place must mean nearly the same
            WHEN only_a BETWEEN 1 AND $max_sub AND only_b BETWEEN 1 AND $max_sub AND in_place
            THEN (da2 + db2 - (a_norm * a_norm + b_norm * b_norm - 2 * a_norm * b_norm * cos))
                 / (2 * sqrt(da2 * db2)) >= $word_min
            ELSE true
        END, false)) AS near_prev
    FROM pair_blocks
    GROUP BY seq
),
-- One window over the tool's calls numbers both: islands of one result (no_progress) and chains of
-- near calls (semantic_near: over the calls with argument features only, hence the FILTER).
islands AS (
    SELECT l.rk, l.tk, l.seq, l.tool, l.args_hash, l.result_hash, l.error_type, l.featured,
           sum(CASE WHEN l.result_begins THEN 1 ELSE 0 END) OVER t AS island,
           sum(CASE WHEN coalesce(n.near_prev, false) THEN 0 ELSE 1 END) FILTER (WHERE l.featured) OVER t AS chain
    FROM lagged l
    LEFT JOIN near n ON n.seq = l.seq
    WINDOW t AS (ORDER BY l.rk, l.tk, l.seq ROWS UNBOUNDED PRECEDING)
),
no_progress AS (
    -- the same successful result 3+ times in a row in the tool's calls, for 3+ different arguments
    SELECT rk, 'no_progress' AS kind, any_value(tool) AS tool, NULL::VARCHAR AS args_hash, count(*) AS count,
           min(seq) AS first_seq, max(seq) AS last_seq, true AS no_progress
    FROM islands
    WHERE result_hash IS NOT NULL AND error_type IS NULL
    GROUP BY rk, tk, island
    HAVING count(*) >= 3 AND len(list_distinct(list(args_hash))) >= 3
),
semantic_near AS (
    SELECT rk, tk, any_value(tool) AS tool, count(*) AS count, min(seq) AS first_seq, max(seq) AS last_seq,
           count(result_hash) = count(*) AND min(result_hash) = max(result_hash) AS no_progress
    FROM islands
    WHERE featured
    GROUP BY rk, tk, chain
    HAVING count(*) >= 3 AND len(list_distinct(list(args_hash))) >= 3
),
-- The loop guard's record: each flagged call repeats the call of that tool just before it.
semantic_guard AS (
    SELECT rk, tk, any_value(tool) AS tool, count(*) + 1 AS count, coalesce(min(prev_seq), min(seq)) AS first_seq,
           max(seq) AS last_seq, NULL::BOOLEAN AS no_progress
    FROM lagged
    WHERE loop_kind = 'semantic' AND scope = 'run'
    GROUP BY rk, tk
),
semantic AS (
    -- A run the guard watched and one with argument features can both report a tool: keep one row.
    SELECT rk, 'semantic' AS kind, any_value(tool) AS tool, NULL::VARCHAR AS args_hash, max(count) AS count,
           min(first_seq) AS first_seq, max(last_seq) AS last_seq, bool_and(no_progress) AS no_progress
    FROM (SELECT * FROM semantic_guard UNION ALL SELECT * FROM semantic_near)
    GROUP BY rk, tk
),
found AS (
    SELECT f.*, row_number() OVER () AS loop_id,
           a.trace_id AS first_trace, a.run_id AS first_run, a.step AS first_step, a.ts AS first_at,
           z.trace_id AS last_trace, z.run_id AS last_run, a.scope, a.session_id
    FROM (
        SELECT * FROM exact
        UNION ALL SELECT * FROM oscillation
        UNION ALL SELECT * FROM repeated_error
        UNION ALL SELECT * FROM semantic
        UNION ALL SELECT * FROM no_progress
    ) f
    JOIN calls a ON a.seq = f.first_seq
    JOIN calls z ON z.seq = f.last_seq
    -- a session's loop is one no single run shows: its calls span runs
    WHERE a.scope = 'run' OR a.trace_id <> z.trace_id OR a.run_id <> z.run_id
),
wasted AS (
    SELECT f.loop_id, coalesce(sum(coalesce(w.input_tokens, 0) + coalesce(w.output_tokens, 0)), 0) AS wasted_tokens
    FROM found f
    LEFT JOIN work w ON w.rk = f.rk AND w.span_type = 'llm' AND w.ts > f.first_at
    GROUP BY f.loop_id
)
SELECT r.trace_id, r.run_id, r.agent, r.service, r.started_at, f.tool, f.kind, f.args_hash, f.count, f.first_step,
       f.first_at, w.wasted_tokens, f.scope, f.session_id, f.no_progress
FROM found f
-- a loop is reported on the run of its last call (for a run's own loop: that run)
JOIN runs r ON r.trace_id = f.last_trace AND r.run_id = f.last_run
JOIN wasted w ON w.loop_id = f.loop_id
