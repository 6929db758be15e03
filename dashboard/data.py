"""Where the dashboard's data comes from: :mod:`loopsight.client`, the one read client.

Pages use only its sources (same methods, same shapes as the ``/api/v1/*`` routes), through
``ui.load``, which caches answers for a few seconds.
"""

from loopsight.client import (
    COLLECTOR_ENV,
    DB_ENV,
    DEFAULT_COLLECTOR_URL,
    STORE_ENV,
    TOKEN_ENV,
    ApiSource,
    AuthRequired,
    DuckDBSource,
    NotAvailable,
    OutdatedStore,
    Source,
    SourceError,
    SourceUnreachable,
    StoreSource,
    open_source,
    source_from_env,
    store_source,
)

__all__ = [
    "COLLECTOR_ENV",
    "DB_ENV",
    "DEFAULT_COLLECTOR_URL",
    "STORE_ENV",
    "TOKEN_ENV",
    "ApiSource",
    "AuthRequired",
    "DuckDBSource",
    "NotAvailable",
    "OutdatedStore",
    "Source",
    "SourceError",
    "SourceUnreachable",
    "StoreSource",
    "open_source",
    "source_from_env",
    "store_source",
]
