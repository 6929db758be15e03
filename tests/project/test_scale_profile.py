"""The docker-compose ``scale`` profile and its OpenTelemetry Collector config fit together.

No Docker engine, ClickHouse server or otelcol binary runs here, so this checks what can be
checked without them: the files parse, the exporter uses only settings the contrib
``clickhouseexporter`` documents, every pipeline component is defined, and the collector,
ClickHouse and the loopsight dashboard agree on the database, table and credentials.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from loopsight.stores import parse_store_url

ROOT = Path(__file__).resolve().parents[2]

# exporter/clickhouseexporter/README.md, "Configuration options" (opentelemetry-collector-contrib).
EXPORTER_KEYS = {
    "endpoint",
    "username",
    "password",
    "ttl",
    "database",
    "connection_params",
    "create_schema",
    "compress",
    "async_insert",
    "tls",
    "logs_table_name",
    "traces_table_name",
    "metrics_tables",
    "cluster_name",
    "table_engine",
    "timeout",
    "sending_queue",
    "retry_on_failure",
}
SENDING_QUEUE_KEYS = {"enabled", "num_consumers", "queue_size", "sizer", "block_on_overflow", "storage", "batch"}
RETRY_KEYS = {"enabled", "initial_interval", "max_interval", "max_elapsed_time"}
ENDPOINT = re.compile(r"^(tcp|http|https|clickhouse)://[^/?]+(\?.*)?$")
DURATION = re.compile(r"^\d+(ms|s|m|h)$")


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _otelcol_config() -> tuple[dict[str, Any], dict[str, Any]]:
    service = _compose()["services"]["otelcol"]
    (mount,) = [v for v in service["volumes"] if v.endswith(":/etc/otelcol-contrib/config.yaml:ro")]
    path = ROOT / mount.split(":")[0]
    return service, yaml.safe_load(path.read_text())


def test_the_scale_profile_has_collector_clickhouse_and_dashboard() -> None:
    services = _compose()["services"]
    scale = {name for name, svc in services.items() if "scale" in svc.get("profiles", [])}
    assert scale == {"clickhouse", "otelcol", "deriver-scale", "dashboard-scale"}
    assert services["otelcol"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["clickhouse"]["image"].startswith("clickhouse/clickhouse-server:")
    for name in ("otelcol", "deriver-scale", "dashboard-scale"):
        assert services[name]["depends_on"]["clickhouse"]["condition"] == "service_healthy"


def test_the_exporter_uses_only_documented_settings() -> None:
    _, config = _otelcol_config()
    exporter = config["exporters"]["clickhouse"]
    assert set(exporter) <= EXPORTER_KEYS, set(exporter) - EXPORTER_KEYS
    assert set(exporter.get("sending_queue", {})) <= SENDING_QUEUE_KEYS
    assert set(exporter.get("retry_on_failure", {})) <= RETRY_KEYS
    assert ENDPOINT.match(exporter["endpoint"]), exporter["endpoint"]
    for key in ("ttl", "timeout"):
        assert DURATION.match(str(exporter[key])), (key, exporter[key])
    assert exporter["create_schema"] is True  # the exporter creates otel_traces: loopsight never does


def test_every_pipeline_component_is_defined() -> None:
    _, config = _otelcol_config()
    pipeline = config["service"]["pipelines"]["traces"]
    for kind in ("receivers", "processors", "exporters"):
        assert set(pipeline[kind]) <= set(config[kind]), kind
    assert set(config["service"].get("extensions", [])) <= set(config.get("extensions", {}))
    assert pipeline["processors"][0] == "memory_limiter"  # first, as the processor's documentation asks
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}


def test_collector_clickhouse_and_dashboard_agree_on_where_spans_are() -> None:
    services = _compose()["services"]
    otelcol, config = _otelcol_config()
    exporter = config["exporters"]["clickhouse"]
    env = otelcol["environment"]
    for key in ("database", "username", "password"):
        (name,) = re.findall(r"^\$\{env:(\w+)\}$", exporter[key])
        assert name in env, f"{key} reads ${{env:{name}}}, which the otelcol service does not set"
    clickhouse_env = services["clickhouse"]["environment"]
    assert env["CLICKHOUSE_DB"] == clickhouse_env["CLICKHOUSE_DB"]
    assert env["CLICKHOUSE_USER"] == clickhouse_env["CLICKHOUSE_USER"]
    assert env["CLICKHOUSE_PASSWORD"] == clickhouse_env["CLICKHOUSE_PASSWORD"]
    host = exporter["endpoint"].split("://", 1)[1].split(":", 1)[0]
    assert host == "clickhouse"

    store = services["dashboard-scale"]["environment"]["LOOPSIGHT_STORE"]
    assert services["deriver-scale"]["environment"]["LOOPSIGHT_STORE"] == store  # it derives what the dashboard reads
    assert services["deriver-scale"]["command"][0] == "collector"
    url = parse_store_url(store.replace("${CLICKHOUSE_PASSWORD:-loopsight}", "loopsight"))
    assert (url.host, url.port, url.database, url.user) == (
        "clickhouse",
        8123,
        clickhouse_env["CLICKHOUSE_DB"],
        clickhouse_env["CLICKHOUSE_USER"],
    )
    assert url.table == exporter["traces_table_name"]


def test_the_image_installs_what_its_services_open() -> None:
    """The image installed ``[all]``, which lacks clickhouse-connect: the scale profile's services
    on ``clickhouse://`` stores stopped at start with "needs clickhouse-connect"."""
    import tomllib

    (install,) = re.findall(r"loopsight-\*\.whl\)\[([a-z,]+)\]", (ROOT / "Dockerfile").read_text())
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = set(install.split(","))
    for name in list(names):  # the extras an installed extra pulls in (``all = ["loopsight[...]"]``)
        for requirement in extras[name]:
            if requirement.startswith("loopsight["):
                names |= set(requirement[len("loopsight[") : requirement.index("]")].split(","))
    installed = {r.split(">")[0].split("=")[0].split("<")[0].split(";")[0].strip() for n in names for r in extras[n]}
    for name, service in _compose()["services"].items():
        store = service.get("environment", {}).get("LOOPSIGHT_STORE", "")
        if store.startswith("clickhouse://"):
            assert "clickhouse-connect" in installed, name
