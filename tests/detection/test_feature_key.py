"""The store's secret key: argument words hashed with it and their vectors turned by it, so a copy
of the DuckDB file alone tells no argument word; loops are judged the same with any key."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from loopsight.ingest import features
from loopsight.ingest.embedding import default_model
from loopsight.stores.files import KEY_BYTES, secret_key
from loopsight.stores.protocol import StoreError


def test_the_key_is_made_once_readable_by_its_owner_only(tmp_path):
    path = str(tmp_path / "l.duckdb")
    key = secret_key(path)
    assert len(key) == KEY_BYTES and secret_key(path) == key
    assert stat.S_IMODE(os.stat(path + ".key").st_mode) == 0o600
    assert secret_key(":memory:") != secret_key(":memory:")
    (tmp_path / "bad.duckdb.key").write_bytes(b"short")
    with pytest.raises(StoreError, match="is not a loopsight key"):
        secret_key(str(tmp_path / "bad.duckdb"))


@pytest.fixture()
def keyed():
    yield features.set_hash_key
    features.set_hash_key(b"")


def _vec(text: str) -> np.ndarray:
    t = features.call_features(text).text
    assert t is not None and t.vec is not None
    return t.vec.astype(np.float32)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.skipif(default_model() is None, reason="the word model (loopsight[semantic]) is not installed")
def test_a_key_hides_the_words_and_keeps_every_similarity(keyed):
    a, b = '{"q": "cheap flights london to tokyo"}', '{"q": "cheapest flight from london to tokyo"}'
    plain_words, plain_a, plain_b = features.call_features(a).text.words, _vec(a), _vec(b)
    keyed(os.urandom(32))
    secret_words, secret_a, secret_b = features.call_features(a).text.words, _vec(a), _vec(b)
    assert set(plain_words).isdisjoint(secret_words)  # a dictionary hashed without the key matches nothing
    assert _cos(plain_a, secret_a) < 0.5  # the stored vector no longer reads against the public model
    assert _cos(secret_a, secret_b) == pytest.approx(_cos(plain_a, plain_b), abs=0.02)
