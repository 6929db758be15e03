"""Record spans in memory with one TracerProvider per ``service.name`` (test fixture builders share it)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class ServiceTracers:
    """``tracer(service)`` returns a tracer whose spans end up in the shared ``exporter``."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.exporter = InMemorySpanExporter()
        self._providers: dict[str, TracerProvider] = {}

    def tracer(self, service: str) -> trace.Tracer:
        if service not in self._providers:
            provider = TracerProvider(resource=Resource.create({"service.name": service}))
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
            self._providers[service] = provider
        return self._providers[service].get_tracer(self.scope)
