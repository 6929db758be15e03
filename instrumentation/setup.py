"""``configure()`` and ``shutdown()``: where spans go.

``configure()`` builds a TracerProvider with an OTLP exporter (HTTP/protobuf by default,
gRPC with the ``grpc`` extra) behind a batch processor, honouring the standard ``OTEL_*``
variables; or it adopts the TracerProvider the application already has and adds only what
is missing, never the same exporter twice.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import trace

from loopsight import checks
from loopsight.config import traces_url

from . import nesting
from .content import clean_value, set_capture
from .state import STATE, internal_error, refresh_from_env

_LOCK = threading.Lock()
_created: list[Any] = []  # providers configure() made (shut down entirely)
_added: list[Any] = []  # processors configure() added to someone else's provider
_PROTOCOLS = ("http/protobuf", "grpc")


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def otlp_protocol(protocol: str | None = None) -> str:
    """``protocol``, else ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL``, else ``http/protobuf``; checked."""
    if protocol is None:
        protocol = _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if protocol not in _PROTOCOLS:
        raise ValueError(f"protocol must be one of {_PROTOCOLS}, got {protocol!r}")
    return protocol


def otlp_exporter(protocol: str, endpoint: str | None, headers: Mapping[str, str] | None) -> Any:
    """The OTLP span exporter :func:`configure` would make (``None`` values: the ``OTEL_*`` variables)."""
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise RuntimeError("OTLP/gRPC export needs the grpc extra: pip install 'loopsight[grpc]'") from None
        kwargs: dict[str, Any] = {}
        if endpoint:
            kwargs["endpoint"] = endpoint
            kwargs["insecure"] = endpoint.startswith("http://") or "://" not in endpoint
        if headers is not None:
            kwargs["headers"] = dict(headers)
        return OTLPSpanExporter(**kwargs)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

    return Http(
        endpoint=traces_url(endpoint) if endpoint else None, headers=dict(headers) if headers is not None else None
    )


def check_endpoint(endpoint: Any, protocol: str) -> None:
    """Refuse an endpoint the exporter would accept and then lose every span to: not a str, or
    without an ``http://`` / ``https://`` scheme (gRPC also takes a bare ``host:port``)."""
    checks.text("endpoint", endpoint, optional=True, empty=False)
    if endpoint is None or endpoint.startswith(("http://", "https://")):
        return
    if protocol == "grpc" and "://" not in endpoint:
        return
    raise ValueError(
        f"endpoint must be a URL starting with http:// or https:// (e.g. http://127.0.0.1:4318), got {endpoint!r}"
    )


def _check_arguments(
    endpoint: Any, protocol: str, service_name: Any, headers: Any, tracer_provider: Any, exporter: Any, batch: Any
) -> None:
    """Everything :func:`configure` is given, checked before anything is changed."""
    check_endpoint(endpoint, protocol)
    checks.text("service_name", service_name, optional=True)
    if headers is not None:
        if not isinstance(headers, Mapping):
            raise TypeError(f"headers must be a mapping of str to str, got {headers!r}")
        for key, value in headers.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"headers must map str to str, got {key!r}: {value!r}")
    checks.has_methods("tracer_provider", tracer_provider, ("get_tracer",), "a TracerProvider", optional=True)
    checks.has_methods("exporter", exporter, ("export", "shutdown"), "a SpanExporter", optional=True)
    checks.flag("batch", batch)


def configure(
    endpoint: str | None = None,
    service_name: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    tracer_provider: Any = None,
    capture_content: bool | None = None,
    *,
    redact_patterns: Iterable[str | re.Pattern[str]] | None = None,
    content_max_length: int | None = None,
    exporter: Any = None,
    batch: bool = True,
) -> Any:
    """Send loopsight spans somewhere; returns the TracerProvider in use.

    - ``endpoint``: the collector's base URL (``http://127.0.0.1:4318`` for HTTP,
      ``http://127.0.0.1:4317`` for gRPC); default ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` /
      ``OTEL_EXPORTER_OTLP_ENDPOINT``, else the OTLP default (localhost).
    - ``service_name``: default ``OTEL_SERVICE_NAME`` (and ``OTEL_RESOURCE_ATTRIBUTES``).
    - ``protocol``: ``"http/protobuf"`` or ``"grpc"``; default ``OTEL_EXPORTER_OTLP_PROTOCOL``.
    - ``headers``: default ``OTEL_EXPORTER_OTLP_HEADERS``.
    - ``tracer_provider``: use this SDK provider; otherwise the global one if the application
      set one (an exporter is then added only when ``endpoint`` or ``exporter`` is given),
      else a new provider registered globally.
    - ``capture_content`` / ``redact_patterns`` / ``content_max_length``: see
      :mod:`loopsight.instrumentation.content`.
    - ``exporter``: any SpanExporter instead of OTLP (``batch=False`` exports synchronously).

    Calling it again with the same endpoint adds nothing. With ``LOOPSIGHT_DISABLED=1`` it
    configures nothing and spans are not created.

    Example:
        >>> import loopsight
        >>> provider = loopsight.configure(endpoint="http://127.0.0.1:4318",
        ...                                service_name="my-agent")   # doctest: +SKIP
    """
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    protocol = otlp_protocol(protocol)
    _check_arguments(endpoint, protocol, service_name, headers, tracer_provider, exporter, batch)
    set_capture(capture_content, max_length=content_max_length, redact_patterns=redact_patterns)
    refresh_from_env()
    with _LOCK:
        provider = tracer_provider
        adopted = provider is not None
        if provider is None:
            existing = getattr(trace, "_TRACER_PROVIDER", None)
            if isinstance(existing, TracerProvider):
                provider, adopted = existing, True
        if STATE.disabled:
            return provider if provider is not None else trace.get_tracer_provider()
        if provider is None:
            resource = Resource.create({SERVICE_NAME: service_name} if service_name else {})
            # a lone surrogate (an OTEL_SERVICE_NAME of bytes that are not UTF-8) would lose every batch
            attributes = {key: clean_value(value) for key, value in resource.attributes.items()}
            provider = TracerProvider(resource=Resource(attributes, resource.schema_url))
            _created.append(provider)
            trace.set_tracer_provider(provider)
        elif service_name and provider.resource.attributes.get(SERVICE_NAME) != service_name:
            internal_error(
                "configure: service_name ignored, the existing provider keeps its resource", ValueError(service_name)
            )
        if not adopted or endpoint is not None or exporter is not None:
            if exporter is None:
                resolved = endpoint or _env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") or ""
                resolved = resolved.rstrip("/")
                if protocol == "http/protobuf" and resolved:
                    resolved = traces_url(resolved)
                key: tuple[str, str] = (protocol, resolved)
            else:
                key = ("exporter", str(id(exporter)))
            done: set[Any] = getattr(provider, "_loopsight_exports", None) or set()
            if key not in done:
                if exporter is None:
                    exporter = otlp_exporter(protocol, endpoint, headers)
                processor = (BatchSpanProcessor if batch else SimpleSpanProcessor)(exporter)
                provider.add_span_processor(processor)
                done.add(key)
                provider._loopsight_exports = done
                if adopted:
                    _added.append(processor)
        nesting.install(provider)
        STATE.provider = provider
        return provider


def shutdown() -> None:
    """Flush and shut down what :func:`configure` created or added; idempotent, never raises."""
    with _LOCK:
        for processor in _added:
            try:
                processor.force_flush()
                processor.shutdown()
            except Exception as exc:
                internal_error("shutdown processor", exc)
        for provider in _created:
            try:
                provider.shutdown()
            except Exception as exc:
                internal_error("shutdown provider", exc)
        if STATE.provider is not None and any(STATE.provider is p for p in _created):
            STATE.provider = None
        _added.clear()
        _created.clear()
