"""Parse ``--store`` URLs: which backend, where, and with which credentials.

Three schemes:

- ``duckdb:///path/to/loopsight.duckdb`` (or a bare path): the embedded DuckDB file.
- ``clickhouse://user:pass@host:8123/db`` (``clickhouses://`` for TLS): a ClickHouse
  server over HTTP via ``clickhouse-connect``. Query options ``?table=otel_traces``.
- ``chdb:///path/to/dir``: the ClickHouse engine embedded in-process (chdb), data in
  that directory (one directory per process). Query options ``?database=name&table=...``.

Example:
    >>> parse_store_url("clickhouse://loop:s3cret@127.0.0.1:8123/otel")
    StoreURL(scheme='clickhouse', path='', host='127.0.0.1', port=8123, user='loop', password='s3cret', database='otel', secure=False, table='otel_traces')
    >>> parse_store_url("chdb:///var/lib/loopsight/ch").path
    '/var/lib/loopsight/ch'
    >>> parse_store_url("./loopsight.duckdb").scheme
    'duckdb'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from loopsight.config import host_port
from loopsight.errors import LoopsightError
from loopsight.model import ALERT_TABLES, TABLES

SCHEMES = ("duckdb", "clickhouse", "clickhouses", "chdb")
DEFAULT_TABLE = "otel_traces"  # the OTel Collector ClickHouse exporter's traces_table_name
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class StoreURLError(LoopsightError, ValueError):
    """The ``--store`` URL cannot be used; the message says what is wrong and what is expected."""


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL. ``scheme`` is ``duckdb``, ``clickhouse`` or ``chdb``."""

    scheme: str
    path: str = ""
    host: str = ""
    port: int = 0
    user: str = "default"
    password: str = ""
    database: str = "default"
    secure: bool = False
    table: str = DEFAULT_TABLE

    @property
    def is_clickhouse(self) -> bool:
        """True for the ClickHouse engine, server or embedded."""
        return self.scheme in ("clickhouse", "chdb")

    def redacted(self) -> str:
        """The URL with the password hidden, for logs and error messages (options not at their default kept).

        Example:
            >>> parse_store_url("chdb:///data/ch?database=prod&table=traces").redacted()
            'chdb:///data/ch?database=prod&table=traces'
            >>> parse_store_url("clickhouse://ann:pw@db:8123/otel?table=traces").redacted()
            'clickhouse://ann:***@db:8123/otel?table=traces'
        """
        options = {"table": self.table} if self.is_clickhouse and self.table != DEFAULT_TABLE else {}
        if self.scheme == "clickhouse":
            scheme = "clickhouses" if self.secure else "clickhouse"
            auth = f"{self.user}:***@" if self.password else f"{self.user}@"
            return f"{scheme}://{auth}{host_port(self.host, self.port)}/{self.database}{_query(options)}"
        if self.scheme == "chdb" and self.database != "default":
            options = {"database": self.database, **options}
        return f"{self.scheme}://{self.path}{_query(options)}"


def _query(options: dict[str, str]) -> str:
    return f"?{urlencode(options)}" if options else ""


_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*:).*@", re.S)


def shown(url: str) -> str:
    """A store URL as a message may show it, even one that does not parse: without its password.

    Example:
        >>> shown("clickhouse://ann:pa[ss@db.internal:8123/otel")
        'clickhouse://ann:***@db.internal:8123/otel'
    """
    return _PASSWORD.sub(r"\1***@", url, count=1)


def parse_store_url(url: str) -> StoreURL:
    """Parse a store URL (see the module doc); raises :class:`StoreURLError` on bad input.

    Example:
        >>> parse_store_url("clickhouses://ch.internal/otel").port
        8443
    """
    if not isinstance(url, str) or not url.strip():
        raise StoreURLError("empty store URL: use duckdb:///path, clickhouse://user:pass@host:8123/db or chdb:///dir")
    url = url.strip()
    if "://" not in url:
        return StoreURL("duckdb", path=url)
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        # "Invalid IPv6 URL": a [ or ] outside a bracketed host (the URL is not echoed: it may hold a password)
        raise StoreURLError(
            f"cannot read the store URL ({exc}): percent-encode [ ] @ : / in a user name or password, e.g. %5B for ["
        ) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise StoreURLError(
            f"unknown store scheme {scheme!r} in {shown(url)!r}: use duckdb:///path, clickhouse://user:pass@host:8123/db or chdb:///dir"
        )
    options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    # an option the scheme does not take was read as nothing (?database= of a server: the path is its database)
    known = {"duckdb": options.keys(), "chdb": {"table", "database"}}.get(scheme, {"table"})
    if unknown := sorted(options.keys() - known):
        raise StoreURLError(
            f"unknown store URL option {unknown[0]!r} in {shown(url)!r}: {scheme}:// takes ?{'&'.join(sorted(known))}"
            + (" (the database is the path: clickhouse://user:pass@host:8123/db)" if unknown[0] == "database" else "")
        )
    table = options.get("table", DEFAULT_TABLE)
    if not _IDENT.match(table):
        raise StoreURLError(f"table name {table!r} is not a plain identifier")
    if table in {*TABLES, *ALERT_TABLES, "spans_staged"} or table.startswith("loopsight_"):
        raise StoreURLError(f"table {table!r} is loopsight's own: ?table= names the exporter's (traces_table_name)")
    if scheme in ("duckdb", "chdb"):
        path = unquote(parts.netloc + parts.path)
        if not path:
            raise StoreURLError(
                f"{scheme} store URL needs a path: {scheme}:///path/to/{'file.duckdb' if scheme == 'duckdb' else 'dir'}"
            )
        database = options.get("database", "default")
        if scheme == "chdb" and not _IDENT.match(database):
            raise StoreURLError(f"database name {database!r} is not a plain identifier")
        return StoreURL(scheme, path=path, table=table, database=database)
    secure = scheme == "clickhouses"
    if "@" in parts.path + parts.query + parts.fragment:  # a / ? or # in the password ended the host before its @
        raise StoreURLError(
            f"cannot read the store URL {shown(url)!r}: percent-encode / ? # in a user name or password, e.g. %2F for /"
        )
    if not parts.hostname:
        raise StoreURLError(
            f"clickhouse store URL needs a host: clickhouse://user:pass@host:8123/db (got {shown(url)!r})"
        )
    try:
        port = parts.port or (8443 if secure else 8123)
    except ValueError:
        raise StoreURLError(f"bad port in store URL {shown(url)!r}") from None
    database = unquote(parts.path.lstrip("/")) or "default"
    if not _IDENT.match(database):
        raise StoreURLError(f"database name {database!r} is not a plain identifier")
    return StoreURL(
        "clickhouse",
        host=parts.hostname,
        port=port,
        user=unquote(parts.username) if parts.username else "default",
        password=unquote(parts.password) if parts.password else "",
        database=database,
        secure=secure,
        table=table,
    )
