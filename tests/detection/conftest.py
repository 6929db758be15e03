"""The labelled corpus, built once per session into a real DuckDB file through the ingest path."""

from __future__ import annotations

import duckdb
import pytest
from detection_corpus import Labels, build

from loopsight.stores.duckdb_store import DuckDBReader


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Labels]:
    path = tmp_path_factory.mktemp("corpus") / "corpus.duckdb"
    labels = build(path)
    return str(path), labels


@pytest.fixture()
def corpus_con(corpus: tuple[str, Labels]):
    con = DuckDBReader(duckdb.connect(corpus[0], read_only=True))
    yield con
    con.close()
