"""``loopsight ingest`` file formats, and the per-span limits applied at ingest."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import re
import struct
import subprocess
import sys

from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from spans import kv, make_run, request_of, span_count

from loopsight.collector.ingest import ingest_files
from loopsight.ingest.normalize import TRUNCATION_MARKER, Limits, normalize_span


def hexify(data: dict) -> dict:
    """protobuf's JSON mapping writes ids in base64; OTLP/JSON wants hex."""
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return data


def test_ingest_json_jsonl_protobuf_framed_and_gzip_files(tmp_path):
    runs = [make_run(tools=2) for _ in range(6)]
    single = tmp_path / "one.json"
    single.write_text(json.dumps(hexify(json_format.MessageToDict(request_of(runs[0])))))
    lines = tmp_path / "exporter.jsonl"
    lines.write_text("\n".join(json.dumps(hexify(json_format.MessageToDict(request_of(r)))) for r in runs[1:3]) + "\n")
    proto = tmp_path / "one.pb"
    proto.write_bytes(request_of(runs[3]).SerializeToString())
    framed = tmp_path / "stream.binpb"
    framed.write_bytes(
        b"".join(struct.pack(">I", len(b)) + b for b in (request_of(r).SerializeToString() for r in runs[4:6]))
    )
    zipped = tmp_path / "again.jsonl.gz"
    zipped.write_bytes(gzip.compress(lines.read_bytes()))  # duplicates of exporter.jsonl
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"resourceSpans": []}\n{"resourceSpans": [\n')

    db = str(tmp_path / "ingest.duckdb")
    summary = ingest_files([str(p) for p in (single, lines, proto, framed, zipped, broken)], db, progress=False)
    assert summary.files == 6
    assert summary.accepted == 6 * 4 + 2 * 4
    assert summary.stored == 6 * 4 and summary.duplicates == 8
    assert len(summary.errors) == 1 and "broken.jsonl:2" in summary.errors[0]
    assert span_count(db) == 24
    assert "24 stored" in str(summary)


def test_ingest_cli_prints_a_summary(tmp_path):
    path = tmp_path / "t.pb"
    path.write_bytes(request_of(make_run(tools=1)).SerializeToString())
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPSIGHT_")}
    result = subprocess.run(
        [sys.executable, "-m", "loopsight", "ingest", str(path), "--db", str(tmp_path / "c.duckdb")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "3 stored" in result.stdout


def ingest_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPSIGHT_")}
    return subprocess.run(
        [sys.executable, "-m", "loopsight", "ingest", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_ingest_cli_exits_1_when_a_file_is_skipped_and_0_for_duplicates(tmp_path):
    good = tmp_path / "t.pb"
    good.write_bytes(request_of(make_run(tools=1)).SerializeToString())
    text = tmp_path / "hello.json"
    text.write_text("hello world\n")
    db = str(tmp_path / "c.duckdb")
    mixed = ingest_cli(str(good), str(text), "--db", db)
    assert mixed.returncode == 1, mixed.stdout + mixed.stderr
    assert "3 stored" in mixed.stdout
    assert f"{text}: not valid JSON" in mixed.stdout and "Wire format" not in mixed.stdout
    assert "1 of 2 file(s) skipped" in mixed.stderr and "Traceback" not in mixed.stderr
    again = ingest_cli(str(good), "--db", db)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 stored, 3 already present" in again.stdout
    nothing = ingest_cli(str(text), "--db", db)
    assert nothing.returncode == 1 and "1 of 1 file(s) skipped" in nothing.stderr


def test_ingest_cli_names_the_file_in_every_skip_message(tmp_path):
    cases = {
        "list.json": b"[1, 2]",
        "null.jsonl": b"null\n",
        "pretty.json": b'{\n  "resourceSpans": [\n    {"scopeSpans": []}\n  \n',
        "lines.jsonl": b'{"resourceSpans": []}\n{"resourceSpans": 3}\n',
        "broken.json.gz": b"\x1f\x8b\x08\x00broken",
        "empty.pb": b"",
        "noise.bin": b"\xff" * 16,
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
    }
    for name, body in cases.items():
        (tmp_path / name).write_bytes(body)
    done = ingest_cli(*(str(tmp_path / name) for name in cases), "--db", str(tmp_path / "c.duckdb"))
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Aborted" not in done.stderr + done.stdout
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped: ")]
    named = [next(name for name in cases if line.startswith(f"skipped: {tmp_path / name}")) for line in skipped]
    assert list(dict.fromkeys(named)) == list(cases), done.stdout  # each file named, in order
    assert named.count("list.json") == 2  # [1, 2]: each item is not a request
    assert f"{tmp_path / 'pretty.json'}: not valid JSON" in done.stdout and "line 5" in done.stdout
    assert f"{tmp_path / 'lines.jsonl'}:2:" in done.stdout  # its first line is loaded
    assert f"{tmp_path / 'deep.json'}: JSON nested too deeply" in done.stdout
    assert f"{len(cases)} of {len(cases)} file(s) skipped" in done.stderr


def test_a_bad_part_of_a_file_costs_only_itself(tmp_path):
    runs = [make_run(tools=1) for _ in range(5)]  # 3 spans each
    lines = [json.dumps(hexify(json_format.MessageToDict(request_of(r)))) for r in runs]
    jsonl = tmp_path / "mid.jsonl"
    jsonl.write_text("\n".join([lines[0], lines[1], '{"resourceSpans": 3}', "{not json", lines[2]]) + "\n")
    array = tmp_path / "items.json"
    array.write_text("[" + ", ".join([lines[3], '{"resourceSpans": "x"}']) + "]")
    frames = [request_of(r).SerializeToString() for r in runs]
    stream = b"".join(struct.pack(">I", len(f)) + f for f in frames[:3])
    cut = tmp_path / "cut.pb"  # a file exporter's file still being written: the last message cut short
    cut.write_bytes(stream[:-5])
    noisy = tmp_path / "noisy.pb"  # a message in the middle that is not OTLP
    noisy.write_bytes(b"".join(struct.pack(">I", len(f)) + f for f in (frames[3], b"\xff" * 9, frames[4])))
    db = str(tmp_path / "c.duckdb")
    done = ingest_cli(str(jsonl), str(array), str(cut), str(noisy), "--db", db)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    # 3 + 1 + 2 + 2 requests of 3 spans: runs 0-2, 3, 0-1 again and 3-4 (3 again)
    assert "24 spans read from 4 file(s)" in done.stdout and "15 stored, 9 already present" in done.stdout
    assert f"skipped: {jsonl}:3:" in done.stdout and f"skipped: {jsonl}:4:" in done.stdout
    assert f"skipped: {array} (item 2):" in done.stdout
    assert f"skipped: {cut} (message 3): cut short, " in done.stdout
    assert f"skipped: {noisy} (message 2): not an OTLP protobuf message" in done.stdout
    assert "4 of 4 file(s) skipped or loaded only in part" in done.stderr


def test_a_json_lines_file_whose_first_line_is_bad_loads_its_other_lines(tmp_path):
    """Only the first line decided whether a file that is not one JSON document is JSON lines: a
    corrupt first line (a collector's file exporter killed mid-write, then restarted on the same
    file) lost every good line after it, against "a bad line is skipped". A broken pretty-printed
    document is still one error naming where it breaks."""
    good = [json.dumps(hexify(json_format.MessageToDict(request_of(make_run(tools=1))))) for _ in range(2)]
    path = tmp_path / "first.jsonl"
    path.write_text("\n".join(['{"resourceSpans": [{"scopeSpans": [', *good]) + "\n")
    broken = tmp_path / "pretty.json"
    broken.write_text(json.dumps(json.loads(good[0]), indent=2)[:-40])
    done = ingest_cli(str(path), str(broken), "--db", str(tmp_path / "c.duckdb"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "6 spans read from 2 file(s)" in done.stdout and "6 stored" in done.stdout, done.stdout
    assert f"skipped: {path}:1: malformed JSON" in done.stdout
    assert len(re.findall(rf"^skipped: {re.escape(str(broken))}: not valid JSON", done.stdout, re.M)) == 1


def test_a_file_of_many_bad_lines_prints_a_few_and_counts_the_rest(tmp_path):
    good = json.dumps(hexify(json_format.MessageToDict(request_of(make_run(tools=1)))))
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([good] + ["{nope"] * 500) + "\n")
    done = ingest_cli(str(path), "--db", str(tmp_path / "c.duckdb"))
    assert done.returncode == 1 and "3 stored" in done.stdout, done.stdout + done.stderr
    assert len(re.findall(rf"^skipped: {re.escape(str(path))}:\d+: malformed JSON", done.stdout, re.M)) == 20
    assert f"skipped: {path}: 480 more part(s) not shown" in done.stdout
    assert "1 of 1 file(s) skipped or loaded only in part" in done.stderr


def test_ingest_cli_refuses_a_directory_and_a_missing_file(tmp_path):
    (tmp_path / "traces").mkdir()
    done = ingest_cli(str(tmp_path / "traces"), str(tmp_path / "nope.json"), "--db", str(tmp_path / "c.duckdb"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'traces'}: is a directory" in done.stderr
    assert f"{tmp_path / 'nope.json'}: no such file" in done.stderr
    assert not (tmp_path / "c.duckdb").exists()


def test_limits_truncate_long_values_and_cap_attributes_and_events():
    limits = Limits(max_attribute_length=32, max_attributes=5, max_events=2)
    span = Span(
        trace_id=b"\x01" * 16,
        span_id=b"\x02" * 8,
        name="execute_tool search",
        attributes=[kv("gen_ai.tool.name", "search"), kv("note", "x" * 100)] + [kv(f"k{i}", i) for i in range(20)],
        events=[Span.Event(name=f"retry{i}", time_unix_nano=i, attributes=[kv("long", "y" * 50)]) for i in range(10)],
    )
    row = normalize_span(span, {}, "", "", limits)
    assert row.SpanAttributes["note"] == "x" * 32 + TRUNCATION_MARKER
    assert len(row.SpanAttributes) == 5
    assert [name for _, name, _ in row.Events] == ["retry0", "retry1"]
    assert row.Events[0][2]["long"] == "y" * 32 + TRUNCATION_MARKER
    assert row.tool == "search"


def test_content_is_dropped_unless_captured_but_still_hashed():
    span = Span(
        trace_id=b"\x01" * 16,
        span_id=b"\x02" * 8,
        name="execute_tool search",
        attributes=[
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.call.arguments", '{"b": 1, "a": 2}'),
            kv("gen_ai.tool.call.result", "secret result"),
            kv("llm.input_messages.0.message.content", "hi"),
        ],
    )
    dropped = normalize_span(span, {}, "", "", Limits())
    kept = normalize_span(span, {}, "", "", Limits(capture_content=True))
    assert set(dropped.SpanAttributes) == {"gen_ai.operation.name"}
    assert dropped.args_hash == kept.args_hash == hashlib.sha256(b'{"a":2,"b":1}').hexdigest()[:16]
    assert kept.SpanAttributes["gen_ai.tool.call.result"] == "secret result"
    assert dropped.args_frame == kept.args_frame != 0  # what loops are judged by, without the text
    assert dropped.result_hash is None  # a result this short tells no question from another


def test_out_of_range_numbers_do_not_break_a_batch(store):
    from loopsight.stores import ingest_request

    spans = make_run(tools=1)
    spans[0].attributes.extend([kv("gen_ai.usage.input_tokens", "9" * 40), kv("loopsight.step", 2**40)])
    spans[1].end_time_unix_nano = 2**64 - 1
    spans.append(Span(trace_id=b"\x03" * 16, span_id=b"\x04" * 8, name="future", start_time_unix_nano=2**63 + 5))
    assert ingest_request(store, request_of(spans)) == 3
    tokens, step = store.reader().execute("SELECT input_tokens, step FROM spans WHERE span_type = 'llm'").fetchone()
    assert (tokens, step) == (None, 0)  # unusable values dropped; the step is then derived


def test_a_token_count_that_is_not_a_whole_number_is_missing(collector_server):
    """docs/api.md: a token count that is not an integer is stored as missing. A double of 12.7
    (OpenInference) or a Langfuse usage of 10.5 was stored as 12 and 10; a whole double (3.0, as
    JavaScript SDKs may send a count) is still the count."""
    import httpx
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    spans = make_run(tools=0)
    chat, root = spans
    del chat.attributes[:]
    chat.attributes.extend(
        [
            kv("openinference.span.kind", "LLM"),
            kv("llm.model_name", "gpt-4o"),
            KeyValue(key="llm.token_count.prompt", value=AnyValue(double_value=12.7)),
            KeyValue(key="llm.token_count.completion", value=AnyValue(double_value=3.0)),
            KeyValue(key="loopsight.step", value=AnyValue(double_value=7.5)),
        ]
    )
    langfuse = Span()
    langfuse.CopyFrom(chat)
    langfuse.span_id = os.urandom(8)
    langfuse.start_time_unix_nano += 500
    del langfuse.attributes[:]
    langfuse.attributes.extend(
        [
            kv("langfuse.observation.type", "generation"),
            kv("langfuse.observation.usage_details", '{"input": 10.5, "output": 4.0}'),
        ]
    )
    answer = httpx.post(
        collector_server.traces_url,
        content=request_of([chat, langfuse, root]).SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    detail = httpx.get(f"{collector_server.url}/api/v1/runs/{chat.trace_id.hex()}", timeout=30).json()
    read = {s["span_id"]: (s["input_tokens"], s["output_tokens"], s["step"]) for s in detail["spans"]}
    assert read[chat.span_id.hex()][:2] == (None, 3) and read[chat.span_id.hex()][2] != 7  # 7.5: derived
    assert read[langfuse.span_id.hex()][:2] == (None, 4)
    stored = {s["span_id"]: s["attributes"] for s in detail["spans"]}[chat.span_id.hex()]
    assert stored["llm.token_count.prompt"] == "12.7"  # the attribute itself is kept
    [run] = detail["runs"]
    assert (run["input_tokens"], run["output_tokens"]) == (0, 7)


def _long_run() -> list[Span]:
    spans = make_run(tools=1)
    spans[-1].attributes.append(kv("note", "n" * 100))
    spans[-1].attributes.extend(kv(f"k{i}", i) for i in range(10))
    spans[-1].events.extend(Span.Event(name=f"e{i}", time_unix_nano=spans[-1].start_time_unix_nano) for i in range(5))
    return spans


def _stored_run_span(db_path: str) -> tuple[dict, int]:
    import duckdb

    con = duckdb.connect(db_path, read_only=True)
    try:
        attrs, events = con.execute(
            'SELECT "SpanAttributes", len("Events") FROM spans WHERE span_type = \'agent\''
        ).fetchone()
    finally:
        con.close()
    return attrs, events


def test_a_link_id_of_any_length_is_cut_as_values_are(collector_server):
    """A link's ids were stored as the hex of whatever bytes came: a 2 MiB id became 4 million
    characters of ``Links``, past ``--max-attribute-length`` (a span's own ids of the wrong length
    are rejected; a link's are kept, cut)."""
    import duckdb
    import httpx

    span = make_run(tools=0)[-1]
    span.links.add(trace_id=b"\x03" * (2 << 20), span_id=b"\x04" * 8, trace_state="t" * 10_000)
    span.links.add(trace_id=b"\x05" * 16, span_id=b"\x06" * 8)
    body = request_of([span]).SerializeToString()
    answer = httpx.post(collector_server.traces_url, content=body, headers={"Content-Type": "application/x-protobuf"})
    assert answer.status_code == 200, answer.text
    assert collector_server.stop() == 0
    with duckdb.connect(collector_server.db_path, read_only=True) as con:
        [(links,)] = con.execute('SELECT "Links" FROM spans').fetchall()
    cap = Limits().max_attribute_length
    assert [(link["TraceId"], link["SpanId"], len(link["TraceState"])) for link in links] == [
        ("03" * (cap // 2) + TRUNCATION_MARKER, "04" * 8, cap + len(TRUNCATION_MARKER)),
        ("05" * 16, "06" * 8, 0),
    ]


def test_collector_and_ingest_take_the_limits_as_flags_or_variables(start_collector, tmp_path):
    flags = ("--max-attribute-length", "16", "--max-attributes", "8", "--max-events", "2")
    server = start_collector(*flags)
    import httpx

    assert (
        httpx.post(
            server.traces_url,
            content=request_of(_long_run()).SerializeToString(),
            headers={"Content-Type": "application/x-protobuf"},
            timeout=30,
        ).status_code
        == 200
    )
    assert server.stop() == 0
    path = tmp_path / "run.pb"
    path.write_bytes(request_of(_long_run()).SerializeToString())
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LOOPSIGHT_")},
        "LOOPSIGHT_MAX_ATTRIBUTE_LENGTH": "16",
        "LOOPSIGHT_MAX_ATTRIBUTES": "8",
        "LOOPSIGHT_MAX_EVENTS": "2",
    }
    loaded = subprocess.run(
        [sys.executable, "-m", "loopsight", "ingest", str(path), "--db", str(tmp_path / "i.duckdb")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert loaded.returncode == 0, loaded.stderr
    for db in (server.db_path, str(tmp_path / "i.duckdb")):
        attrs, events = _stored_run_span(db)
        assert len(attrs) == 8 and events == 2, db
        assert attrs["note"] == "n" * 16 + TRUNCATION_MARKER, db

    refused = subprocess.run(
        [sys.executable, "-m", "loopsight", "ingest", str(path), "--db", str(tmp_path / "j.duckdb")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "LOOPSIGHT_MAX_EVENTS": "0"},
    )
    assert refused.returncode == 2 and "max-events" in refused.stderr and "Traceback" not in refused.stderr
