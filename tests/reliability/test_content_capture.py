"""Raw prompts, arguments and results from any producer: not stored unless content capture is
on, and with it on, secrets are redacted by the collector before they reach the DB."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from reliability_support import stored
from spans import failed, kv, request_of, tool_span

SECRETS = {
    "openai": "sk-proj-" + "Ab3dEf9hIjK1mNoPqR7sTuVwXyZ0aB2cD4eF6gH8iJ0kL2mN",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "bearer": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "email": "jane.doe@example.com",
    "card": "4111 1111 1111 1111",
}
HARMLESS = "refund order ORD-77123"
# an exception's message and stacktrace are not content but hold str(exc): redacted either way
SECRET_ERROR = " ".join(SECRETS.values())
TEXT = (
    f"{HARMLESS}; key {SECRETS['openai']} aws {SECRETS['aws']} auth {SECRETS['bearer']} "
    f"gh {SECRETS['github']} mail {SECRETS['email']} card {SECRETS['card']}"
)

# where each ecosystem puts content (span attributes), see shared/spec/attributes.md
CONTENT_KEYS = [
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "input.value",
    "output.value",
    "tool.parameters",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "langfuse.observation.input",
    "langfuse.observation.output",
    "llm.input_messages.0.message.content",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.content",
    "pydantic_ai.all_messages",
    "events",
    "langfuse.trace.input",
    "langfuse.trace.output",
    "llm.prompt_template.template",
    "llm.prompt_template.variables",
    "retrieval.documents.0.document.content",
    "reranker.input_documents.1.document.content",
    "embedding.embeddings.0.embedding.text",
    # kept as sent until a review found them (2026-12-04)
    "llm.input_messages",
    "llm.output_messages",
    "gen_ai.prompt",
    "gen_ai.completion",
    "mlflow.spanInputs",
    "mlflow.spanOutputs",
    "ai.prompt",
    "ai.prompt.messages",
    "ai.response.text",
    "ai.toolCall.args",
    "ai.toolCall.result",
    # kept as sent until a review found them (2026-12-05)
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.tool_response",
    "llm.completions.0.content",
    "reranker.query",
    "tool_call.function.arguments",
]


def _spans() -> list[Span]:
    trace = b"\x31" * 16
    tool = tool_span(trace, b"\x32" * 8, 1_700_000_000_000_000_000, {key: TEXT for key in CONTENT_KEYS})
    chat = tool_span(
        trace,
        b"\x33" * 8,
        1_700_000_000_100_000_000,
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", **{key: TEXT for key in CONTENT_KEYS}},
        name="chat gpt-4o",
    )
    for name, key in (
        ("gen_ai.content.prompt", "gen_ai.prompt"),
        ("gen_ai.content.completion", "gen_ai.completion"),
        ("gen_ai.client.inference.operation.details", "gen_ai.input.messages"),
        ("gen_ai.choice", "message"),
        ("gen_ai.assistant.message", "tool_calls"),
        ("gen_ai.user.message", "gen_ai.event.content"),  # Azure AI Inference, Semantic Kernel
    ):
        chat.events.append(Span.Event(time_unix_nano=1_700_000_000_100_000_001, name=name, attributes=[kv(key, TEXT)]))
    failing = tool_span(
        trace, b"\x34" * 8, 1_700_000_000_200_000_000, {"gen_ai.tool.name": "call_api"}, name="execute_tool call_api"
    )
    failed(
        failing,
        "PermissionError",
        SECRET_ERROR,
        f'Traceback (most recent call last):\n  raise PermissionError("{SECRET_ERROR}")\nPermissionError: {SECRET_ERROR}',
    )
    # Langfuse marks a failure by level, its message in its own attribute: redacted as a status message
    langfuse = tool_span(
        trace,
        b"\x35" * 8,
        1_700_000_000_300_000_000,
        {"langfuse.observation.level": "ERROR", "langfuse.observation.status_message": f"failed: {SECRET_ERROR}"},
        name="execute_tool lookup",
    )
    return [tool, chat, failing, langfuse]


def _request():
    request = request_of(_spans())
    # the SDK's process detector: the command line, secrets and all, on every span's resource
    request.resource_spans[0].resource.attributes.extend(
        [kv("process.command_line", f"python agent.py --api-key {SECRETS['openai']}")]
    )
    return request


def _dump(db: str) -> str:
    return repr(stored(db, "SELECT * FROM spans"))


@pytest.mark.parametrize("capture", [False, True], ids=["capture-off", "capture-on"])
def test_content_from_foreign_producers(start_collector, capture: bool) -> None:
    server = start_collector(*(["--capture-content"] if capture else []))
    answer = httpx.post(
        server.traces_url,
        content=_request().SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert server.stop() == 0, server.log()
    dump = _dump(server.db_path)
    assert "ORD-77123" not in server.log()
    for kind, secret in SECRETS.items():
        assert secret not in dump, f"{kind} secret stored with capture {'on' if capture else 'off'}"
        tail = secret.split()[-1]  # a bearer token's JWT without its "Bearer"; a card's last group is too
        if len(tail) >= 8:  # short to look for: the argument word hashes are 19-digit numbers that may hold "1111"
            assert tail not in dump, kind
    assert "4111111111111111" not in dump and "4111 1111" not in dump, "no part of the card number"
    if capture:
        assert HARMLESS in dump, "content capture is on but the content was not kept"
        assert "[REDACTED:" in dump
    else:
        assert HARMLESS not in dump, "raw content stored although content capture is off"
        assert "[REDACTED:" in dump, "the exception's message and stacktrace are kept, redacted"
    args_hash = stored(server.db_path, 'SELECT args_hash FROM spans WHERE "SpanId" = \'' + "32" * 8 + "'")
    assert args_hash[0][0], "the args hash is derived from the arguments either way"


@pytest.mark.parametrize(
    "text",
    [
        "a." * 4096,
        "x@" * 4096,
        "1 " * 4096,
        "sk-" + "a" * 8189,
        "Bearer " * 1170,
        "eyJ" + "a." * 4000,
        ("a" * 63 + "@") * 128,
        "sk-" * 2730,  # each "sk-" rescanned the rest: 60,000 characters took 20 s
        "eyJa-" * 1638,
        "password=" * 910,
        "postgres://u:" * 630,
        '\\"api_key\\": \\"' * 600,  # JSON in a JSON string
        "secret: secret: " * 500,
    ],
)
def test_redaction_stays_linear_on_hostile_values(text: str) -> None:
    """With capture on the collector redacts every content value at ingest: a value built to make
    the patterns backtrack must cost in proportion to its length. Measured as a ratio, a quarter
    of the value against the whole (linear: 4x, quadratic: 16x), each the fastest of 7, so a
    loaded machine slows both sides alike (an absolute bound of 30 ms failed on CI at 35 ms)."""
    import time

    from loopsight.redaction import redact

    def fastest(value: str) -> float:
        times = []
        for _ in range(7):
            started = time.perf_counter()
            redact(value)
            times.append(time.perf_counter() - started)
        return min(times)

    quarter, whole = fastest(text[: len(text) // 4]), fastest(text)
    assert whole < 8 * quarter + 0.002, f"a redaction pattern backtracks: {quarter * 1e3:.2f} -> {whole * 1e3:.2f} ms"
    assert whole < 0.5, "a redaction pattern backtracks: half a second for 8 KiB"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # a tool call's arguments inside a logged request: JSON in a JSON string
        ('{"arguments": "{\\"api_key\\": \\"plainAPIKEYvalue99\\", \\"q\\": \\"refunds\\"}"}', "plainAPIKEYvalue99"),
        ('{"arguments": "{\\"password\\": \\"hunter2NESTED\\"}"}', "hunter2NESTED"),
        # a label before the field: the field's value is the secret, not its name
        ("AWS secret: aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCY", "wJalrXUtnFEMIK7MDENGbPxRfiCY"),
    ],
)
def test_secrets_of_named_fields_in_the_shapes_producers_send(text: str, kept: str) -> None:
    from loopsight.redaction import redact

    redacted = redact(text)
    assert kept not in redacted and "[REDACTED:secret]" in redacted, redacted
    assert "refunds" in redacted or "refunds" not in text, "the rest of the arguments stay"
