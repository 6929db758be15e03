"""args_hash: canonical JSON, stable under dict order, never raising."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import hashlib
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsight import args_hash
from loopsight.hashing import canonical_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _shuffled(value, rnd):
    if isinstance(value, dict):
        items = [(k, _shuffled(v, rnd)) for k, v in value.items()]
        rnd.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_shuffled(v, rnd) for v in value]
    return value


@settings(max_examples=100, deadline=None)
@given(value=json_values, rnd=st.randoms(use_true_random=False))
def test_stable_under_dict_order(value, rnd):
    assert args_hash(_shuffled(value, rnd)) == args_hash(value)


@settings(max_examples=60, deadline=None)
@given(value=json_values)
def test_shape_and_definition(value):
    digest = args_hash(value)
    assert len(digest) == 16 and digest == digest.lower()
    assert int(digest, 16) >= 0
    expected = hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    assert digest == expected


def test_canonical_form_is_the_specified_one():
    assert canonical_json({"b": 1, "a": [1.5, "é", None, True]}) == '{"a":[1.5,"é",null,true],"b":1}'
    assert args_hash({"q": "x"}) == hashlib.sha256(b'{"q":"x"}').hexdigest()[:16]
    assert args_hash({"city": "Zürich"}) == hashlib.sha256('{"city":"Zürich"}'.encode()).hexdigest()[:16]
    assert args_hash({"a": 1}) != args_hash({"a": 1.5})


@dataclasses.dataclass
class Point:
    x: int
    tags: set


class Color(enum.Enum):
    RED = "red"


def test_exotic_values():
    value = {
        "p": Point(1, {"b", "a"}),
        "when": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "day": dt.date(2024, 1, 2),
        "blob": b"\x00\xff",
        "money": decimal.Decimal("1.10"),
        "id": uuid.UUID(int=1),
        "color": Color.RED,
        "fs": frozenset({3, 1, 2}),
        "t": (1, 2),
    }
    text = canonical_json(value)
    assert '"p":{"tags":["a","b"],"x":1}' in text
    assert '"when":"2024-01-02T03:04:05+00:00"' in text
    assert '"blob":"00ff"' in text and '"fs":[1,2,3]' in text and '"color":"red"' in text
    assert args_hash(value) == args_hash(dict(reversed(list(value.items()))))


def test_large_bytes_are_hashed_by_their_digest_not_written_as_hex():
    big = bytes(range(256)) * 1024  # 256 KiB
    text = canonical_json({"file": big})
    assert text == f'{{"file":"<{len(big)} bytes, sha256 {hashlib.sha256(big).hexdigest()}>"}}'
    assert args_hash({"file": big}) == args_hash({"file": bytearray(big)}) == args_hash({"file": memoryview(big)})
    assert args_hash({"file": big}) != args_hash({"file": big[:-1] + b"x"})
    small = b"\x00\xff" * 100
    assert canonical_json({"file": small}) == '{"file":"' + small.hex() + '"}'  # as before


def test_pydantic_models():
    pydantic = pytest.importorskip("pydantic")

    class Query(pydantic.BaseModel):
        q: str
        limit: int = 3

    assert args_hash(Query(q="x")) == args_hash({"limit": 3, "q": "x"})


def test_sets_of_mixed_types_and_non_string_keys():
    assert canonical_json({1: "a", "b": 2, None: 3}) == '{"1":"a","b":2,"null":3}'
    assert args_hash({"s": {1, "1", 2.5}}) == args_hash({"s": {2.5, "1", 1}})


def test_unserialisable_never_raises():
    class Weird:
        def __repr__(self):
            raise RuntimeError("no repr")

    circular: list = []
    circular.append(circular)
    for value in (object(), Weird(), circular, {"f": lambda: 1}, {Weird(): 1}, float("nan")):
        assert len(args_hash(value)) == 16


def test_object_address_does_not_leak_into_hash():
    class Session:
        pass

    assert args_hash({"s": Session()}) == args_hash({"s": Session()})
