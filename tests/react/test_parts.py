"""Unit tests of the loop's parts: schema validator, silent checks, embedder, estimator, backoff."""

from __future__ import annotations

import random

import pytest

from loopsight.react import silent
from loopsight.react.context import ContextPolicy, estimate_messages, estimate_tokens
from loopsight.react.guard import GuardConfig, HashingEmbedder, LoopGuard, cosine
from loopsight.react.retry import RetryPolicy
from loopsight.react.schema import missing_required, validate
from loopsight.react.silent import SilentConfig, default_checks, detect


@pytest.mark.parametrize(
    ("value", "schema", "fragment"),
    [
        ({"a": 1}, {"type": "object", "properties": {"a": {"type": "string"}}}, "expected string"),
        ({}, {"type": "object", "required": ["a"]}, "missing required property 'a'"),
        ({"a": "x"}, {"type": "object", "properties": {"a": {"enum": ["y", "z"]}}}, "is not one of"),
        ({"a": "abc"}, {"properties": {"a": {"pattern": "^[0-9]+$"}}}, "does not match pattern"),
        ({"a": 1, "b": 2}, {"properties": {"a": {}}, "additionalProperties": False}, "unexpected property 'b'"),
        ({"a": True}, {"properties": {"a": {"type": "integer"}}}, "expected integer, got boolean"),
        ({"a": [1, "x"]}, {"properties": {"a": {"type": "array", "items": {"type": "integer"}}}}, "$.a[1]"),
        ({"a": -1}, {"properties": {"a": {"type": "number", "minimum": 0}}}, "less than 0"),
    ],
)
def test_schema_validator_reports_each_violation(value, schema, fragment):
    errors = validate(value, schema)
    assert errors and fragment in errors[0]


def test_schema_validator_accepts_valid_values_and_lists_missing_arguments():
    schema = {
        "type": "object",
        "required": ["id", "n"],
        "properties": {"id": {"type": "string"}, "n": {"type": "integer"}},
    }
    assert validate({"id": "x", "n": 2.0}, schema) == []
    assert missing_required({"id": "x"}, schema) == ["n"]


def test_silent_thresholds_are_configurable_and_checks_pluggable():
    strict = default_checks(SilentConfig(min_page_chars=200))
    assert detect("fetch", {"content": "x" * 100}, strict).code == "too_short"
    assert detect("fetch", {"content": "x" * 100}, default_checks()) is None
    custom = [lambda tool, result: None]
    assert detect("fetch", {"results": []}, custom) is None
    long_article = "Please sign in to continue. " + "real content " * 200
    assert detect("fetch", long_article, default_checks()) is None  # a long page that mentions sign-in is kept
    assert detect("fetch", "x" * 100, strict) is None  # a bare string is an answer, not a document
    strings = [silent.too_short_check(200, strings=True)]
    assert detect("fetch", "x" * 100, strings).code == "too_short"  # a fetcher returning bare page text


def test_embedder_separates_near_duplicates_from_different_queries():
    embed = HashingEmbedder()
    near = cosine(embed("refund policy damaged items 2024"), embed("refund policy for damaged items 2024"))
    far = cosine(embed("refund policy damaged items 2024"), embed("warranty claim process"))
    assert near >= 0.88 > 0.5 > far
    assert cosine(embed("订单查询 物流"), embed("订单查询物流")) >= 0.88


def test_guard_semantic_window_is_bounded():
    guard = LoopGuard()
    guard.record("search", {"q": "refund policy damaged items"}, "h0", "ok")
    for i in range(5):
        guard.record("search", {"q": f"unrelated topic number {i} about shipping"}, f"h{i + 1}", "ok")
    assert guard.check("search", {"q": "refund policy damaged items!"}, "hx") is None  # out of the last 5


def test_guard_compares_queries_not_documents_passed_as_arguments():
    """A 2 MB argument took 6 s to embed, twice a call; a text over max_query_chars is not embedded,
    while exact repeats of it are still blocked."""
    embedded: list[int] = []

    def embedder(text: str) -> list[float]:
        embedded.append(len(text))
        return HashingEmbedder()(text)

    guard = LoopGuard(GuardConfig(embedder=embedder))
    document = "the quarterly report says revenue grew " * 60  # 2,340 characters
    for hash_, text in (("h1", document), ("h2", document + " again")):
        assert guard.check("summarize", {"text": text}, hash_) is None
        guard.record("summarize", {"text": text}, hash_, "ok")
    assert embedded == []
    for _ in range(2):
        guard.record("summarize", {"text": document}, "h1", "ok")
    hit = guard.check("summarize", {"text": document}, "h1")
    assert hit is not None and hit.kind == "exact"
    short = {"q": "quarterly report revenue"}
    guard.record("search", short, "h3", "ok")
    assert guard.check("search", {"q": "quarterly report revenue?"}, "h4") is not None  # queries still are
    assert embedded and max(embedded) <= GuardConfig().max_query_chars


def test_guard_frame_numbers_named_as_ids_are_entities_other_numbers_knobs():
    guard = LoopGuard()
    note = {"note": "customer complaint about late delivery"}
    guard.record("open_ticket", note | {"order_id": 100234, "priority": 2}, "h1", "ok")
    assert guard.check("open_ticket", note | {"order_id": 100235, "priority": 2}, "h2") is None  # another order
    hit = guard.check("open_ticket", note | {"order_id": 100234, "priority": 3}, "h3")  # a knob tweak
    assert hit is not None and hit.kind == "semantic" and hit.similarity == 1.0
    guard.record("open_ticket", note | {"orderId": 7, "next_page_token": "abc"}, "h4", "ok")
    assert guard.check("open_ticket", note | {"orderId": 7, "next_page_token": "abd"}, "h5") is None  # next page


@pytest.mark.subprocess
def test_guard_frame_is_the_collector_s_and_needs_no_extra():
    """The guard's frame comes from the collector's field kinds (one rule): another city is another
    question, a sort order a knob. It needs none of the collector extra's packages (the base
    install's loopsight.react): they are made missing here as they are there."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for name in ('pyarrow', 'numpy', 'duckdb', 'google.protobuf', 'opentelemetry.proto', 'safetensors'):\n"
        "    sys.modules[name] = None\n"
        "from loopsight.react.guard import LoopGuard\n"
        "guard = LoopGuard()\n"
        "guard.record('weather', {'city': 'paris', 'units': 'metric'}, 'h1', 'ok')\n"
        "print(guard.check('weather', {'city': 'oslo', 'units': 'metric'}, 'h2'))\n"
        "guard.record('search', {'q': 'refund policy', 'sort': 'asc'}, 'h3', 'ok')\n"
        "print(guard.check('search', {'q': 'refund policy', 'sort': 'desc'}, 'h4').kind)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "semantic"]


def test_estimator_counts_content_and_tool_calls():
    assert estimate_tokens("") == 0 and estimate_tokens("100234") == 2
    msgs = [
        {"role": "user", "content": "hello world"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "search", "arguments": '{"q":"x"}'}}],
        },
    ]
    assert estimate_messages(msgs) > estimate_tokens("hello world") + 8


def test_context_policy_rejects_bad_thresholds():
    with pytest.raises(ValueError):
        ContextPolicy(compact_at=0.9, compress_at=0.5)


def test_full_jitter_backoff_bounds():
    policy, rng = RetryPolicy(base=0.1, cap=1.0), random.Random(3)
    delays = [policy.delay(a, rng) for a in range(10) for _ in range(20)]
    assert all(0 <= d <= 1.0 for d in delays) and max(delays) > 0.5
    assert policy.delay(0, rng, retry_after=100) == 30.0  # capped retry_after
