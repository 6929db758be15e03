"""The batched feature pass stores, to the bit, what the per-call pass stored: against the
per-call figures of ``f18a2b4`` (``feature_golden.json``, see ``feature_corpus.py``), and
between batches of any size and order in this revision."""

from __future__ import annotations

import json
import random
from pathlib import Path

import feature_corpus as corpus
import numpy as np
import pytest

from loopsight.ingest import features
from loopsight.ingest.embedding import default_model

GOLDEN = Path(__file__).with_name("feature_golden.json")


@pytest.fixture()
def keyed():
    features.set_hash_key(corpus.KEY)
    yield
    features.set_hash_key(b"")


def _same(a: features.CallFeatures, b: features.CallFeatures) -> bool:
    return (a.frame, a.columns()) == (b.frame, b.columns()) and (
        a.text is None or a.text.vec is None or a.text.vec.dtype == b.text.vec.dtype == np.int8  # type: ignore[union-attr]
    )


@pytest.mark.skipif(default_model() is None, reason="the golden figures hold the word vectors (semantic extra)")
def test_what_is_stored_is_what_f18a2b4_stored():
    got = corpus.digests(corpus.stored(corpus.argument_texts(), corpus.result_texts()))
    want = json.loads(GOLDEN.read_text())
    texts = corpus.argument_texts()
    assert [t for t, g, w in zip(texts, got["arguments"], want["arguments"], strict=True) if g != w] == []
    results = corpus.result_texts()
    assert [r for r, g, w in zip(results, got["results"], want["results"], strict=True) if g != w] == []


@pytest.mark.parametrize("model", ["default", None])
def test_a_batch_gives_each_call_what_it_gets_alone(keyed, model):
    model = default_model() if model == "default" else None
    texts = corpus.argument_texts()
    features.clear_caches()
    alone = [features.call_features(t, model) for t in texts]
    rng = random.Random(3)
    for order in ("as sent", "shuffled", "in chunks"):
        features.clear_caches()
        batch = list(range(len(texts)))
        if order == "shuffled":
            rng.shuffle(batch)
        if order == "in chunks":
            got: dict[int, features.CallFeatures] = {}
            start = 0
            while start < len(batch):
                size = rng.randint(1, 40)
                part = batch[start : start + size]
                got.update(zip(part, features.calls_features([texts[i] for i in part], model), strict=True))
                start += size
            out = [got[i] for i in range(len(texts))]
        else:
            out = [None] * len(texts)
            for i, f in zip(batch, features.calls_features([texts[i] for i in batch], model), strict=True):
                out[i] = f
        assert [t for t, a, b in zip(texts, alone, out, strict=True) if not _same(a, b)] == [], order


def test_a_parsed_value_given_is_the_text_parsed(keyed):
    texts = corpus.argument_texts()
    values = []
    for t in texts:
        try:
            values.append(json.loads(t))
        except (ValueError, RecursionError):
            values.append(features.NOT_JSON)
    features.clear_caches()
    alone = [features.call_features(t) for t in texts]
    features.clear_caches()
    given = features.calls_features(texts, values=values)
    assert [t for t, a, b in zip(texts, alone, given, strict=True) if not _same(a, b)] == []


def test_texts_features_in_a_batch_are_the_texts_alone(keyed):
    texts = [t for t in corpus.argument_texts() if t] + ["", "the of a", "I", "Oslo"]
    features.clear_caches()
    alone = [features.text_features(t) for t in texts]
    features.clear_caches()
    batch = features.texts_features(texts)
    for a, b in zip(alone, batch, strict=True):
        assert (a.fp, a.words, a.ents, a.norm) == (b.fp, b.words, b.ents, b.norm)
        assert (a.vec is None and b.vec is None) or np.array_equal(a.vec, b.vec)


def _request(texts: list[str], results: list[str | None]):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    def kv(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    spans = []
    for n, (text, result) in enumerate(zip(texts, results, strict=True)):
        attributes = [kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.call.arguments", text)]
        if n % 7 == 3:
            attributes.append(kv("loopsight.tool.args_hash", f"{n:016x}"))  # sent: not computed again
        if result is not None:
            attributes.append(kv("gen_ai.tool.call.result", result))
        spans.append(
            Span(
                trace_id=b"\x01" * 16, span_id=(n + 1).to_bytes(8, "big"), name="execute_tool t", attributes=attributes
            )
        )
        if n % 5 == 0:
            spans.append(Span(trace_id=b"\x01" * 16, span_id=(n + 10**6).to_bytes(8, "big"), name="chat m"))
        if n % 11 == 0:
            spans.append(Span(trace_id=b"\x00" * 16, span_id=b"\x01" * 8, name="rejected"))
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]), spans


def _plain(row):
    return row if isinstance(row, str) else tuple(v.tolist() if isinstance(v, np.ndarray) else v for v in row)


def test_a_request_s_rows_are_its_spans_rows_one_at_a_time(keyed):
    from loopsight.ingest.arguments import call_arguments
    from loopsight.ingest.normalize import Limits, args_hash_of_text, normalize_span
    from loopsight.ingest.otlp import iter_rows

    texts = corpus.argument_texts(400)
    results = (corpus.result_texts() * 2)[:400]
    request, spans = _request(texts, results)
    for limits in (Limits(), Limits(max_attribute_length=40)):
        features.clear_caches()
        alone = [
            normalize_span(s, {}, "", "", limits) if s.trace_id != b"\x00" * 16 else "all-zero trace_id or span_id"
            for s in spans
        ]
        features.clear_caches()
        rows = list(iter_rows(request, limits))
        assert [_plain(r) for r in rows] == [_plain(r) for r in alone]
        if limits == Limits():
            tools = [r for r in rows if not isinstance(r, str) and r.span_type == "tool"]
            assert [r.args_hash for r in tools] == [
                f"{n:016x}" if n % 7 == 3 else args_hash_of_text(call_arguments(t)) if t else None
                for n, t in enumerate(texts)
            ]


def test_a_defect_in_the_feature_rules_loses_no_span(keyed, monkeypatch):
    from loopsight.ingest import normalize
    from loopsight.ingest.normalize import Limits
    from loopsight.ingest.otlp import iter_rows

    real = features.calls_features

    def broken(texts, model=features._UNSET, values=None):
        if len(texts) > 1 or "oslo" in texts[0]:
            raise RuntimeError("a defect")
        return real(texts, model, values)

    monkeypatch.setattr(normalize, "calls_features", broken)
    texts = ['{"q": "weather in oslo"}', '{"q": "cheap flights"}', "not json"]
    request, _ = _request(texts, [None, None, None])
    rows = [r for r in iter_rows(request, Limits()) if not isinstance(r, str) and r.span_type == "tool"]
    assert len(rows) == 3 and all(r.args_hash for r in rows)
    assert rows[0].args_frame is None and rows[1].args_frame and rows[2].args_text_fp


def test_an_exporter_table_s_rows_are_its_rows_one_at_a_time(keyed):
    from exporter_rows import request_to_otel_traces

    from loopsight.ingest.exporter import otel_traces_rows
    from loopsight.ingest.normalize import Limits

    texts = corpus.argument_texts(300)
    results = (corpus.result_texts() * 2)[:300]
    request, _ = _request(texts, results)
    table = request_to_otel_traces(request)
    for limits in (Limits(), Limits(max_attribute_length=40)):
        features.clear_caches()
        alone = [row for i in range(table.num_rows) for row in otel_traces_rows(table.slice(i, 1), limits)]
        features.clear_caches()
        rows = list(otel_traces_rows(table, limits))
        assert len(rows) == table.num_rows
        assert [_plain(r) for r in rows] == [_plain(r) for r in alone]
        assert sum(r.span_type == "tool" and r.args_hash is not None for r in rows) > 200
