"""Where measurements come from: a DuckDB connection, or a collector's query API.

Example:
    >>> source = ApiSource("http://127.0.0.1:4318", token=None)  # doctest: +SKIP
    >>> source.measure(MetricSpec("loop_rate"), since, until)  # doctest: +SKIP
    Measurement(value=0.1, samples=20, examples=[...])
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import httpx

from loopsight.alerts.metrics import Measurement, measure
from loopsight.alerts.rules import MetricSpec
from loopsight.errors import LoopsightError


class SourceError(LoopsightError):
    """The metric data cannot be read (collector unreachable, refused, DB locked ...)."""


class DuckDBSource:
    """Measures on a DuckDB connection (the collector's own, or a read-only file)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.cache: dict[Any, Measurement] = {}  # one source per evaluation round

    def measure(self, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
        return measure(self.con, spec, since, until, self.cache)


def metric_params(spec: MetricSpec, since: datetime, until: datetime) -> dict[str, str]:
    """Query parameters of ``GET /api/v1/alerts/metric`` for ``spec`` over ``[since, until)``."""
    params: dict[str, Any] = {"metric": spec.metric, "since": since.isoformat() + "Z", "until": until.isoformat() + "Z"}
    params.update(spec.filters())
    if "stuck_after" in params:
        params["stuck_after"] = max(1, round(params["stuck_after"]))
    return {k: str(v) for k, v in params.items()}


class ApiSource:
    """Measures through a collector's ``/api/v1/alerts/metric`` (the file stays with the collector)."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def measure(self, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
        try:
            response = self.client.get("/api/v1/alerts/metric", params=metric_params(spec, since, until))
        except httpx.HTTPError as exc:
            raise SourceError(f"cannot reach the collector at {self.url}: {exc}") from None
        if response.status_code == 401:
            raise SourceError(
                f"the collector at {self.url} refused the token (401): pass --token or set LOOPSIGHT_TOKEN"
            )
        if response.status_code == 404:
            raise SourceError(f"{self.url} has no /api/v1/alerts/metric: is it a loopsight collector of this version?")
        if response.status_code != 200:
            raise SourceError(f"the collector at {self.url} answered {response.status_code}: {response.text[:300]}")
        try:
            return Measurement.from_dict(response.json())
        except (ValueError, TypeError, AttributeError) as exc:
            raise SourceError(f"the collector at {self.url} sent an unreadable answer: {exc}") from None

    def close(self) -> None:
        self.client.close()
