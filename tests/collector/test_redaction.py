"""The collector redacts what any producer sends (exception and status messages always, content
with capture on) with the redactor the decorators use: credentials in URLs, Authorization headers
and secret-named fields too (a review found them stored verbatim, 2026-12-04)."""

from __future__ import annotations

import duckdb
import httpx
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from spans import failed, request_of, tool_span

DSN = "postgres://admin:Hunter2pw@db.internal:5432/orders"
ERROR = f"could not connect to {DSN} (password=Tr0ub4dor&3)"
ARGUMENTS = (
    '{"headers":{"Authorization":"Basic dXNlcjpwYXNzd29yZA==","x-api-key":"8f14e45fceea167a5a36dedd4bea2543"},'
    '"api_key":"k-77e1a9","url":"mysql://root:s3cr3t@10.0.0.5/db"}'
)
SECRETS = ["Hunter2pw", "Tr0ub4dor", "dXNlcjpwYXNzd29yZA", "8f14e45fceea167a5a36dedd4bea2543", "k-77e1a9", "s3cr3t"]


def _failing_call() -> Span:
    span = tool_span(
        b"\x41" * 16,
        b"\x42" * 8,
        1_700_000_000_000_000_000,
        {"gen_ai.tool.name": "connect", "gen_ai.tool.call.arguments": ARGUMENTS},
        name="execute_tool connect",
    )
    failed(span, "OperationalError", ERROR, f"Traceback (most recent call last):\nOperationalError: {ERROR}")
    return span


@pytest.mark.parametrize("capture", [False, True], ids=["capture-off", "capture-on"])
def test_foreign_credentials_are_redacted_before_the_db(start_collector, capture: bool) -> None:
    server = start_collector(*(["--capture-content"] if capture else []))
    answer = httpx.post(
        server.traces_url,
        content=request_of([_failing_call()]).SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert server.stop() == 0, server.log()
    con = duckdb.connect(str(server.db_path), read_only=True)
    try:
        rows = con.execute("SELECT * FROM spans").fetchall()
        (status,) = con.execute('SELECT "StatusMessage" FROM spans').fetchone()
    finally:
        con.close()
    dump = repr(rows)
    for secret in SECRETS:
        assert secret not in dump, f"{secret} stored with capture {'on' if capture else 'off'}"
    # what makes the message useful stays: scheme, user, host
    assert status == (
        "could not connect to postgres://admin:[REDACTED:password]@db.internal:5432/orders (password=[REDACTED:secret])"
    )
    assert ("mysql://root:[REDACTED:password]@10.0.0.5/db" in dump) is capture
