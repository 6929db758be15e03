"""The ``loopsight`` command line.

Defaults come from flags, then ``LOOPSIGHT_*`` environment variables, then built-ins.
Each command imports its part lazily, so ``loopsight demo`` works with the
instrumentation alone installed.

Example:
    $ loopsight up --demo
    $ loopsight runs --limit 5
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO, cast

import typer
import typer.core
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loopsight import config

if TYPE_CHECKING:
    from loopsight.prices import PriceBook

app = typer.Typer(
    name="loopsight",
    help="See where tool-calling agents stall, loop and burn tokens.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_value_type = typer.core.TyperOption.display_type_rich


def _flag_has_no_value(self: typer.core.TyperOption, ctx: Any) -> str | None:
    # Typer prints each option's type beside it; a flag takes no value, so "<bool>" only confuses.
    return None if self.is_flag else _value_type(self, ctx)


typer.core.TyperOption.display_type_rich = _flag_has_no_value  # type: ignore[method-assign]

db_app = typer.Typer(help="Schema migrations of the DuckDB store.", no_args_is_help=True)
alerts_app = typer.Typer(help="Alert rules.", no_args_is_help=True)


def _print_version(value: bool) -> None:
    if value:
        console.print(f"loopsight {config.VERSION}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """See where tool-calling agents stall, loop and burn tokens."""


app.add_typer(db_app, name="db")
app.add_typer(alerts_app, name="alerts")

# Piped output keeps whole rows (a table squeezed to 80 columns hides ids and reasons).
console = Console(width=None if sys.stdout.isatty() else 220)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 220)


def _db_path(value: str) -> str:
    if not value.strip():
        raise typer.BadParameter("is empty: give a file path")
    return value


DbOpt = Annotated[str, typer.Option("--db", envvar="LOOPSIGHT_DB", callback=_db_path, help="DuckDB file.")]


def _token(value: str | None) -> str | None:
    """A bearer token an HTTP header can carry: printable ASCII, no spaces (RFC 6750)."""
    if value is not None and not all("!" <= c <= "~" for c in value):
        raise typer.BadParameter("a bearer token is printable ASCII without spaces (letters, digits, -._~+/=)")
    return value


TokenOpt = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="LOOPSIGHT_TOKEN",
        callback=_token,
        help="Bearer token required/sent on every route but /healthz.",
    ),
]
CollectorOpt = Annotated[
    str | None,
    typer.Option(
        "--collector", envvar="LOOPSIGHT_COLLECTOR_URL", help="Collector base URL (default http://127.0.0.1:4318)."
    ),
]
PricesOpt = Annotated[
    str | None,
    typer.Option(
        "--prices",
        envvar="LOOPSIGHT_PRICES",
        help="Price file (TOML or YAML: model pattern -> USD per million input/output/cached tokens) over the "
        "bundled genai-prices table (docs/cost.md).",
    ),
]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="LOOPSIGHT_STORE",
        help="Store URL instead of --db: duckdb:///file, clickhouse://user:pass@host:8123/db or chdb:///dir.",
    ),
]
ReadDbOpt = Annotated[
    str | None, typer.Option("--db", help="Read this DuckDB file directly (no collector may hold it).")
]
CaptureOpt = Annotated[
    bool, typer.Option(envvar="LOOPSIGHT_CAPTURE_CONTENT", help="Keep raw arguments/messages (redacted).")
]
MaxValueOpt = Annotated[
    int,
    typer.Option(
        envvar="LOOPSIGHT_MAX_ATTRIBUTE_LENGTH",
        min=1,
        help="Attribute values longer than this many characters are cut, with a marker.",
    ),
]
MaxAttributesOpt = Annotated[
    int, typer.Option(envvar="LOOPSIGHT_MAX_ATTRIBUTES", min=1, help="Attributes kept per span (or event, link).")
]
MaxEventsOpt = Annotated[
    int, typer.Option(envvar="LOOPSIGHT_MAX_EVENTS", min=1, help="Events (and links) kept per span.")
]
HttpPortOpt = Annotated[
    int, typer.Option(envvar="LOOPSIGHT_HTTP_PORT", min=1, max=65535, help="OTLP/HTTP + query API port.")
]
GrpcPortOpt = Annotated[
    int, typer.Option(envvar="LOOPSIGHT_GRPC_PORT", min=0, max=65535, help="OTLP/gRPC port (0: off).")
]
DashboardPortOpt = Annotated[
    int, typer.Option(envvar="LOOPSIGHT_DASHBOARD_PORT", min=1, max=65535, help="Dashboard port.")
]

DEFAULT_COLLECTOR = f"http://{config.DEFAULT_HOST}:{config.DEFAULT_HTTP_PORT}"
_ENVVARS = {"collector": "LOOPSIGHT_COLLECTOR_URL", "store": "LOOPSIGHT_STORE"}


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` in red on stderr, on one line (a driver's text may hold line breaks), and return the Exit to raise."""
    err.print(f"[red]error:[/red] {escape(' '.join(message.split()))}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


def _from_flag(ctx: typer.Context, name: str) -> bool:
    # By name: recent Typer vendors its own click, whose ParameterSource is another enum.
    return getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"


def _one_flag(ctx: typer.Context, given: dict[str, str | None]) -> dict[str, str]:
    """The options of ``given`` set by a flag; two of them are an error naming both."""
    flags = {name: value for name, value in given.items() if value is not None and _from_flag(ctx, name)}
    if len(flags) > 1:
        names = [f"--{name}" for name in given]
        choice = f"{', '.join(names[:-1])} or {names[-1]}"
        raise fail(f"give one of {choice}, not " + " and ".join(f"--{name}" for name in flags))
    return flags


def _read_source(
    ctx: typer.Context, collector: str | None, db: str | None, store: str | None
) -> tuple[str | None, str | None, str | None]:
    """Keep one of ``--collector``/``--db``/``--store``: a flag beats any ``LOOPSIGHT_*`` variable.

    Two flags, or (without a flag) two variables, are an error; so are an empty value and a
    collector address that is not an http(s) URL.
    """
    given = {"collector": collector, "db": db, "store": store}
    chosen = _one_flag(ctx, given) or {name: value for name, value in given.items() if value is not None}
    if len(chosen) > 1:
        envvars = " and ".join(_ENVVARS[name] for name in chosen)
        raise fail(f"{envvars} are both set: give one of --collector, --db or --store to choose")
    said = {name: f"--{name}" if _from_flag(ctx, name) else _ENVVARS.get(name, f"--{name}") for name in chosen}
    for name, value in chosen.items():
        if not value.strip():
            raise fail(f"{said[name]} is empty: give a {'URL' if name != 'db' else 'file path'}")
    _quiet_drivers()
    return _http_url(said.get("collector", ""), chosen.get("collector")), chosen.get("db"), chosen.get("store")


def _write_store(ctx: typer.Context, store: str | None) -> str | None:
    """``--store`` (which wins over the ``LOOPSIGHT_DB`` variable), unless it only came from
    ``LOOPSIGHT_STORE`` and ``--db`` was a flag; both flags are an error."""
    _one_flag(ctx, {"db": "", "store": store})
    if store is not None and not _from_flag(ctx, "store") and _from_flag(ctx, "db"):
        return None
    _quiet_drivers()
    return store


def _quiet_drivers() -> None:
    """A store driver's own log lines (clickhouse_connect's "Unexpected Http Driver Exception")
    stay out of a command's output: the command's ``error:`` line says what failed."""
    import logging

    logging.getLogger("clickhouse_connect").setLevel(logging.CRITICAL)


def _http_url(option: str, value: str | None) -> str | None:
    """``value`` when it is an http(s) URL with a host (None stays None); otherwise the command ends."""
    if value is None:
        return None
    import httpx

    try:
        url = httpx.URL(value)
        usable = url.scheme in ("http", "https") and bool(url.host)
    except (httpx.InvalidURL, TypeError, ValueError):
        usable = False
    if not usable:
        raise fail(f"{option} {value!r} is not an http(s) URL (e.g. http://127.0.0.1:4318)")
    return value


def _number(minimum: float, maximum: float = math.inf) -> Any:
    """A parser for a float option: a finite number from ``minimum`` to ``maximum`` ("nan" is not a number)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a number") from None
        if math.isnan(value):
            raise typer.BadParameter(f"{text!r} is not a number")
        if math.isinf(value):
            raise typer.BadParameter(f"{text!r} is not finite")
        if value < minimum:
            raise typer.BadParameter(f"{text} should be >= {minimum:g}")
        if value > maximum:
            raise typer.BadParameter(f"{text} should be <= {maximum:g}")
        return value

    return parse


@app.command()
def collector(
    ctx: typer.Context,
    db: DbOpt = config.DEFAULT_DB,
    host: Annotated[str, typer.Option(envvar="LOOPSIGHT_HOST", help="Address to bind.")] = config.DEFAULT_HOST,
    http_port: HttpPortOpt = config.DEFAULT_HTTP_PORT,
    grpc_port: GrpcPortOpt = config.DEFAULT_GRPC_PORT,
    token: TokenOpt = None,
    rules: Annotated[str | None, typer.Option(envvar="LOOPSIGHT_RULES", help="Alert rules TOML file.")] = None,
    prices: PricesOpt = None,
    retention: Annotated[
        str | None, typer.Option(envvar="LOOPSIGHT_RETENTION", help="Delete spans older than this (e.g. 30d).")
    ] = None,
    forward_to: Annotated[
        str | None,
        typer.Option(envvar="LOOPSIGHT_FORWARD_TO", help="Also forward accepted spans to this OTLP/HTTP endpoint."),
    ] = None,
    alert_interval: Annotated[
        float,
        typer.Option(
            envvar="LOOPSIGHT_ALERT_INTERVAL",
            parser=_number(0.1, 86_400.0),
            help="Seconds between alert evaluations; without --rules, how long /metrics reuses the agent gauges.",
        ),
    ] = 30.0,
    capture_content: CaptureOpt = False,
    max_attribute_length: MaxValueOpt = config.DEFAULT_MAX_ATTRIBUTE_LENGTH,
    max_attributes: MaxAttributesOpt = config.DEFAULT_MAX_ATTRIBUTES,
    max_events: MaxEventsOpt = config.DEFAULT_MAX_EVENTS,
    max_body_bytes: Annotated[
        int, typer.Option(envvar="LOOPSIGHT_MAX_BODY_BYTES", help="Largest request body after decompression.")
    ] = 16 * 1024 * 1024,
    memory_budget: Annotated[
        str | None,
        typer.Option(
            envvar="LOOPSIGHT_MEMORY_BUDGET",
            help="Memory for the whole process, split between DuckDB and requests in flight (default 400MB, the least it runs in).",
        ),
    ] = None,
    store: StoreOpt = None,
    dashboard_url: Annotated[
        str | None,
        typer.Option(
            envvar="LOOPSIGHT_DASHBOARD_URL",
            help="The dashboard's address, for the alerts' links to runs (default http://127.0.0.1:8501/).",
        ),
    ] = None,
) -> None:
    """Run the sidecar: OTLP/HTTP and gRPC in, DuckDB store, query API, alerts."""
    from loopsight.collector.server import StartupError, serve
    from loopsight.ingest.normalize import Limits
    from loopsight.stores import StoreError

    store_url = _write_store(ctx, store)
    _http_url("--dashboard-url", dashboard_url)
    try:
        serve(
            db=db,
            host=host,
            http_port=http_port,
            grpc_port=grpc_port,
            token=token,
            rules=rules,
            retention=retention,
            forward_to=forward_to,
            alert_interval=alert_interval,
            limits=Limits(max_attribute_length, max_attributes, max_events, capture_content),
            max_body_bytes=max_body_bytes,
            store_url=store_url,
            memory_budget=memory_budget,
            prices=prices,
            dashboard_url=dashboard_url,
        )
    except (StartupError, StoreError) as exc:
        raise fail(str(exc)) from None


@app.command()
def dashboard(
    ctx: typer.Context,
    collector: CollectorOpt = None,
    db: ReadDbOpt = None,
    port: DashboardPortOpt = config.DEFAULT_DASHBOARD_PORT,
    host: Annotated[
        str, typer.Option(envvar="LOOPSIGHT_DASHBOARD_HOST", help="Address to bind.")
    ] = config.DEFAULT_HOST,
    token: TokenOpt = None,
    store: StoreOpt = None,
) -> None:
    """Serve the Streamlit dashboard (reads the collector's API, a DuckDB file, or a store URL)."""
    collector, db, store = _read_source(ctx, collector, db, store)
    from loopsight.collector.ports import StartupError, check_port

    if db or store:  # a file or store that cannot be read ends here, as `loopsight runs` says it, not in the browser
        _open_checked(db=db, store=store)
    try:
        check_port(host, port, "the dashboard")
    except StartupError as exc:
        raise fail(f"{exc} (choose another with --host / --port)") from None
    from loopsight.dashboard import launch

    extra = {"store": store} if store else {}
    raise typer.Exit(launch(collector=collector, db=db, port=port, token=token, host=host, **extra))


@app.command()
def demo(
    endpoint: Annotated[
        str | None,
        typer.Option(help="OTLP/HTTP endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT or the local collector)."),
    ] = None,
    runs: Annotated[int, typer.Option(min=1, max=100_000, help="How many agent runs.")] = 40,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same runs).")] = 7,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Runs in parallel.")] = 4,
    speed: Annotated[
        float, typer.Option(parser=_number(0.1), help="Divide the scenarios' real delays by this.")
    ] = 20.0,
    token: TokenOpt = None,
) -> None:
    """Run the reference ReAct loop over the scenario pack and export its spans; exit 1 if they do not arrive."""
    from loopsight.react.demo import ExportFailed, run_demo

    _http_url("--endpoint", endpoint)
    try:
        summary = run_demo(endpoint=endpoint, runs=runs, seed=seed, concurrency=concurrency, speed=speed, token=token)
    except ExportFailed as exc:
        raise fail(str(exc), 1) from None
    console.print(summary)


@app.command()
def ingest(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(help="OTLP JSON, JSON-lines or protobuf files.")],
    db: DbOpt = config.DEFAULT_DB,
    store: StoreOpt = None,
    capture_content: CaptureOpt = False,
    max_attribute_length: MaxValueOpt = config.DEFAULT_MAX_ATTRIBUTE_LENGTH,
    max_attributes: MaxAttributesOpt = config.DEFAULT_MAX_ATTRIBUTES,
    max_events: MaxEventsOpt = config.DEFAULT_MAX_EVENTS,
    collector: Annotated[
        str | None,
        typer.Option(
            "--collector",
            help="Send the files to this running collector (e.g. http://127.0.0.1:4318) instead of opening a store.",
        ),
    ] = None,
    token: TokenOpt = None,
    prices: PricesOpt = None,
) -> None:
    """Load OTLP files into the store (normalized as the collector does), or send them to a running
    collector with --collector; exit 1 if any file was skipped."""
    from loopsight.collector.ingest import SendStopped, ingest_files, send_files
    from loopsight.errors import LoopsightError
    from loopsight.ingest.normalize import Limits
    from loopsight.stores import StoreError

    unreadable = [
        f"{f}: {'is a directory' if f.is_dir() else 'not a regular file' if f.exists() else 'no such file'}"
        for f in files
        if not f.is_file()
    ]
    if unreadable:
        raise fail("; ".join(unreadable))
    if collector is not None:
        given = [
            f"--{name}"
            for name in ("db", "store", "capture-content", "prices")
            if _from_flag(ctx, name.replace("-", "_"))
        ]
        if given:
            raise fail(
                "--collector sends the files to the collector, which has its own store, limits and prices: "
                f"drop {', '.join(given)}"
            )
        _http_url("--collector", collector)
        try:
            summary = send_files([str(f) for f in files], collector, token=token)
        except SendStopped as exc:
            raise fail(str(exc), 130 if exc.interrupted else 2) from None
        except LoopsightError as exc:
            raise fail(str(exc)) from None
        console.print(summary, soft_wrap=True)
        if summary.errors:
            raise fail(f"{len(summary.errors)} request(s) or file(s) not accepted", 1)
        return
    book = _price_book(prices)
    store_url = _write_store(ctx, store)
    try:
        summary = ingest_files(
            [str(f) for f in files],
            db,
            store_url=store_url,
            limits=Limits(max_attribute_length, max_attributes, max_events, capture_content),
            prices=book,
        )
    except SendStopped as exc:
        raise fail(str(exc), 130) from None
    except StoreError as exc:
        raise fail(str(exc)) from None
    console.print(summary, soft_wrap=True)  # one line per skipped file, however long its path
    if summary.errors:
        raise fail(f"{len(summary.failed_files)} of {len(files)} file(s) skipped or loaded only in part", 1)


def _open_checked(collector: str | None = None, db: str | None = None, store: str | None = None) -> Any:
    """The read source of the flags (:func:`loopsight.client.open_source`), opened once to check it
    can be read; an unreadable one ends the command with its message. An embedded chdb store's
    folder is only looked at: its engine takes the folder for the process that opens it first."""
    from loopsight.client import SourceError, StoreSource, open_source
    from loopsight.stores import StoreURLError, parse_store_url

    source = open_source(collector=collector, db=db, store=store)
    try:
        if isinstance(source, StoreSource) and parse_store_url(source.url).scheme == "chdb":
            source.check_folder()
            return source
    except StoreURLError:
        pass  # check() says it as `loopsight runs` does
    except SourceError as exc:
        raise fail(str(exc)) from None
    try:
        source.check()
    except SourceError as exc:
        raise fail(str(exc)) from None
    return source


def _price_book(path: str | None) -> PriceBook:
    """The price book of ``--prices`` (the bundled table alone without); a bad file ends the command."""
    from loopsight.prices import PriceBook, PricesError

    try:
        return PriceBook.from_file(path)
    except PricesError as exc:
        raise fail(f"invalid price file: {exc}") from None


def _since(name: str, value: str | None) -> datetime | None:
    """A ``--since``/``--until`` value: ISO-8601 (UTC when no offset) or relative (``-15m``, ``-2h``, ``-7d``)."""
    from loopsight.collector.api import BadParameter, parse_time

    try:
        return parse_time(name, value)
    except BadParameter as exc:
        raise fail(str(exc).replace(f"{name}=", f"--{name} ", 1)) from None


def _window(since: str | None, until: str | None) -> dict[str, datetime | None]:
    """``--since`` and ``--until`` read (:func:`_since`), the first before the second."""
    from loopsight.collector.api import BadParameter, time_window

    try:
        since_at, until_at = time_window(_since("since", since), _since("until", until))
    except BadParameter:
        raise fail("--since must be before --until") from None
    return {"since": since_at, "until": until_at}


@app.command("runs")
def runs_cmd(
    ctx: typer.Context,
    collector: CollectorOpt = None,
    db: ReadDbOpt = None,
    token: TokenOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="How many runs, newest first.")] = 20,
    store: StoreOpt = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's runs.")] = None,
    status: Annotated[
        str | None, typer.Option(help="ok or error (error: the run failed; see also --termination).")
    ] = None,
    termination: Annotated[
        str | None, typer.Option(help="Only runs that ended so: completed, max_steps, loop_detected, ...")
    ] = None,
    tool: Annotated[str | None, typer.Option(help="Only runs that called this tool.")] = None,
    session: Annotated[str | None, typer.Option(help="Only the runs of this session.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Runs started at or after: ISO-8601 (UTC) or relative, e.g. -2h, -7d.")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Runs started before (as --since).")] = None,
) -> None:
    """List runs, newest first."""
    from loopsight.client import SourceError, open_source

    collector, db, store = _read_source(ctx, collector, db, store)
    if status not in (None, "ok", "error"):
        raise fail(f"--status must be ok or error, not {status!r}")
    window = _window(since, until)
    params: dict[str, Any] = {
        "limit": limit,
        "agent": agent,
        "status": status,
        "termination_reason": termination,
        "tool": tool,
        "session": session,
        **window,
    }
    try:
        source = open_source(collector=collector or DEFAULT_COLLECTOR, db=db, store=store, token=token)
        runs = source.runs(**{k: v for k, v in params.items() if v is not None})
    except SourceError as exc:
        raise fail(str(exc)) from None
    if as_json:
        for run in runs:
            typer.echo(json.dumps(run))
        return
    from loopsight.format import count, duration, money

    table = Table(
        "started (UTC)",
        "agent",
        "status",
        "termination",
        "steps",
        "tools",
        "errors",
        "retries",
        "loops",
        "tokens",
        "cost",
        "duration",
        "trace",
    )
    for run in runs:
        table.add_row(
            run["started_at"][:19].replace("T", " "),
            escape(run["agent"] or "—"),
            f"[red]{run['status']}[/]" if run["status"] == "error" else f"[green]{run['status']}[/]",
            escape(run["termination_reason"] or "—"),
            count(run["steps"]),
            count(run["tool_calls"]),
            count(run["tool_errors"]),
            count(run["retries"]),
            count(run["loops"]),
            count(run["input_tokens"] + run["output_tokens"]),
            money(run.get("cost_usd"), run.get("unpriced_calls"), precise=True),
            duration(run["duration_ms"]),
            run["trace_id"],
        )
    console.print(table)
    if not runs:
        from loopsight.attributes import TERMINATION_REASONS

        unknown = termination is not None and termination not in TERMINATION_REASONS
        hint = f" (--termination {termination!r} is none of {', '.join(TERMINATION_REASONS)})" if unknown else ""
        err.print(f"no runs match{hint}", highlight=False, markup=False, soft_wrap=True)


def _share(part: int, rate: float | None) -> str:
    from loopsight.format import count, pct

    return count(part) if rate is None else f"{count(part)} ({pct(rate)})"


@app.command("budgets")
def budgets_cmd(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent (default: every agent).")] = None,
    service: Annotated[str | None, typer.Option("--service", help="Only this service.")] = None,
    since: Annotated[str | None, typer.Option(help="Runs started at or after (ISO-8601 UTC, or -7d).")] = None,
    until: Annotated[str | None, typer.Option(help="Runs started before (ISO-8601 UTC, or -1h).")] = None,
    by_service: Annotated[bool, typer.Option("--by-service", help="One advice per agent and service.")] = False,
    curve: Annotated[bool, typer.Option("--curve", help="Also print every candidate value of each budget.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the /api/v1/budgets answer as JSON.")] = False,
    collector: CollectorOpt = None,
    db: ReadDbOpt = None,
    token: TokenOpt = None,
    store: StoreOpt = None,
) -> None:
    """Recommend step, tool-call, time and token budgets per agent by replaying its stored runs."""
    collector, db, store = _read_source(ctx, collector, db, store)
    from loopsight.client import SourceError, open_source
    from loopsight.format import figure, react_config, usd

    window = _window(since, until)
    source = open_source(collector=collector or DEFAULT_COLLECTOR, db=db, store=store, token=token)
    try:
        answer = source.budgets(agent=agent, service=service, by_service=by_service, **window)
    except SourceError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(answer))
        return
    if not answer["agents"]:
        console.print(f"no runs{f' of agent {escape(agent)}' if agent else ''} in the window", highlight=False)
        return
    for entry in answer["agents"]:
        name = entry["agent"] or "(unnamed)"
        if by_service:
            name += f" @ {entry['service'] or '-'}"
        console.print(
            f"[bold]{name}[/bold]: {entry['runs']:,} runs, {entry['ok_runs']:,} ok, {entry['bad_runs']:,} bad "
            f"({entry['looped_runs']:,} looped, {entry['budget_runs']:,} stopped by a budget, "
            f"{entry['failed_runs']:,} failed), {entry['other_runs']:,} other; {entry['bad_tokens']:,} tokens on bad runs",
            highlight=False,
        )
        react = entry["reference_loop"]
        table = Table(
            "budget",
            "now",
            "recommended",
            "ok runs cut",
            "bad runs cut",
            "looping stopped",
            "steps earlier",
            "tokens saved",
            "cost saved",
            "ok p50 / p99 / max",
        )
        for budget in entry["budgets"]:
            point = budget["at_recommended"] or {}
            ok = budget["distribution"]["ok"]
            table.add_row(
                budget["react_field"] if react else budget["kind"],
                figure(budget["configured"]),
                figure(budget["recommended"]) if budget["recommended"] is not None else f"- ({budget['reason']})",
                _share(point["ok_runs_cut"], point["ok_cut_rate"]) if point else "",
                _share(point["bad_runs_cut"], point["bad_cut_rate"]) if point else "",
                _share(point["looped_runs_cut"], point["looped_cut_rate"]) if point else "",
                figure(point.get("looped_steps_avoided")) if point else "",
                _share(point["tokens_saved"], point["tokens_saved_share"]) if point else "",
                usd(point.get("cost_saved_usd"), precise=True) if point else "",
                " / ".join(figure(ok[stat]) for stat in ("p50", "p99", "max")),
            )
        console.print(table)
        line = react_config(entry["budgets"]) if react else None
        if line:
            console.print(f"loopsight.react: {line}  (docs/react.md, 'Setting budgets')", highlight=False)
        if curve:
            for budget in entry["budgets"]:
                points = Table(
                    budget["kind"],
                    "ok runs cut",
                    "bad runs cut",
                    "looping stopped",
                    "steps earlier",
                    "tokens saved",
                    "cost saved",
                )
                for p in budget["curve"]:
                    points.add_row(
                        figure(p["value"]) + (" *" if p["value"] == budget["recommended"] else ""),
                        _share(p["ok_runs_cut"], p["ok_cut_rate"]),
                        _share(p["bad_runs_cut"], p["bad_cut_rate"]),
                        _share(p["looped_runs_cut"], p["looped_cut_rate"]),
                        figure(p["looped_steps_avoided"]),
                        _share(p["tokens_saved"], p["tokens_saved_share"]),
                        usd(p["cost_saved_usd"], precise=True),
                    )
                console.print(points)


@alerts_app.command("check")
def alerts_check(
    ctx: typer.Context,
    rules: Annotated[str, typer.Option("--rules", help="Rules TOML file.")],
    collector: CollectorOpt = None,
    db: ReadDbOpt = None,
    token: TokenOpt = None,
    store: StoreOpt = None,
) -> None:
    """Evaluate the rules once; exit 1 if any fires."""
    collector, db, store = _read_source(ctx, collector, db, store)
    from loopsight.alerts import check

    extra = {"store": store} if store else {}
    raise typer.Exit(check(rules, collector=collector, db=db, token=token, console=console, **extra))


@db_app.command("upgrade")
def db_upgrade(
    db: DbOpt = config.DEFAULT_DB,
    prices: PricesOpt = None,
    create: Annotated[
        bool, typer.Option("--create", help="Make a new, empty store when there is no file at --db.")
    ] = False,
) -> None:
    """Apply pending migrations (keeps existing data) and derive what they queued."""
    from loopsight.migrations import current
    from loopsight.stores import StoreError
    from loopsight.stores.duckdb_store import Store

    if not Path(db).is_file() and not (create and not Path(db).exists()):
        why = "it is a directory" if Path(db).is_dir() else "not a regular file" if Path(db).exists() else ""
        if why:
            raise fail(f"no DuckDB file at {db}: {why}")
        raise fail(f"no DuckDB file at {db} (a typo?): give --create to make a new, empty store there")
    book = _price_book(prices)
    try:
        Store.open(db, prices=book).close()  # opening migrates and reprices; closing derives what migrations queued
        revision = current(db)
    except StoreError as exc:
        raise fail(f"cannot upgrade {db}: {exc}") from None
    except Exception as exc:  # alembic/duckdb wrap the cause in several types
        raise fail(f"cannot upgrade {db}: {exc}") from None
    console.print(f"{escape(str(db))} is at revision {revision}")


@db_app.command("current")
def db_current(db: DbOpt = config.DEFAULT_DB) -> None:
    """Print the schema revision of the file."""
    from loopsight.migrations import current

    if not Path(db).is_file():
        raise fail(f"no DuckDB file at {db}")
    try:
        revision = current(db)
    except Exception as exc:  # a lock says who holds the file and how to read it instead
        from loopsight.stores.files import explain_io_error

        why = explain_io_error(db, exc)
        if "locked" in why:
            why += " (a running collector applied every migration when it started)"
        raise fail(why) from None
    console.print(revision or "empty (no migrations applied)")


def _die_with_parent() -> None:
    """In a child of ``loopsight up``, before it runs: on Linux, the kernel sends it SIGTERM when
    ``up`` dies, even by SIGKILL, so no collector or dashboard outlives it (elsewhere: nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took hold
        os.kill(os.getpid(), signal.SIGTERM)


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise fail(f"the collector exited with code {proc.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise fail(f"the collector did not answer {url}/healthz within {timeout:.0f} s")


@app.command()
def up(
    demo: Annotated[bool, typer.Option("--demo/--no-demo", help="Also send demo traffic.")] = False,
    db: DbOpt = config.DEFAULT_DB,
    http_port: HttpPortOpt = config.DEFAULT_HTTP_PORT,
    grpc_port: GrpcPortOpt = config.DEFAULT_GRPC_PORT,
    dashboard_port: DashboardPortOpt = config.DEFAULT_DASHBOARD_PORT,
    demo_runs: Annotated[int, typer.Option(min=1, help="Runs in the first demo batch.")] = 60,
    demo_every: Annotated[
        float, typer.Option(min=0, help="Seconds between further small demo batches (0: none).")
    ] = 30.0,
    token: TokenOpt = None,
    prices: PricesOpt = None,
    rules: Annotated[
        str | None,
        typer.Option(
            envvar="LOOPSIGHT_RULES",
            help="Alert rules TOML file for the collector (with --demo and none given: the demo's sample rules).",
        ),
    ] = None,
) -> None:
    """Collector + dashboard (+ demo traffic) in one command; Ctrl-C stops everything."""
    collector_url = f"http://{config.DEFAULT_HOST}:{http_port}"
    me = [sys.executable, "-m", "loopsight"]
    env = {**os.environ, "LOOPSIGHT_COLLECTOR_URL": collector_url}
    if rules is None and demo:
        from loopsight.react.demo import DEMO_RULES

        rules = str(DEMO_RULES)
        env.setdefault("LOOPSIGHT_ALERT_INTERVAL", "10")  # the demo's alerts show within seconds
    if rules is not None:
        if not Path(rules).is_file():
            raise fail(f"--rules {rules}: no such file")
        env["LOOPSIGHT_RULES"] = str(Path(rules).resolve())
    if token:  # the collector, dashboard and demo all read it (the environment keeps it out of `ps`)
        env["LOOPSIGHT_TOKEN"] = token
    if prices:  # the collector's; checked here first, so a bad file stops before anything starts
        _price_book(prices)
        env["LOOPSIGHT_PRICES"] = str(Path(prices).resolve())
    env.setdefault("LOOPSIGHT_DASHBOARD_URL", f"http://{config.DEFAULT_HOST}:{dashboard_port}/")  # the alerts' links
    from loopsight.collector.ports import StartupError, check_distinct_ports, check_port

    try:  # a port another process holds would have its collector answer /healthz, and get the demo's runs
        check_distinct_ports({"--http-port": http_port, "--grpc-port": grpc_port, "--dashboard-port": dashboard_port})
        for port, what in ((http_port, "OTLP/HTTP"), (grpc_port, "OTLP/gRPC"), (dashboard_port, "the dashboard")):
            if port:
                check_port(config.DEFAULT_HOST, port, what)
    except StartupError as exc:
        raise fail(
            f"{exc}: choose free ports with --http-port, --grpc-port and --dashboard-port "
            "(or LOOPSIGHT_HTTP_PORT, LOOPSIGHT_GRPC_PORT, LOOPSIGHT_DASHBOARD_PORT)"
        ) from None
    procs: list[subprocess.Popen] = []

    def stop_all(*_: object) -> None:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        procs.append(
            subprocess.Popen(
                [*me, "collector", "--db", db, "--http-port", str(http_port), "--grpc-port", str(grpc_port)],
                env=env,
                preexec_fn=_die_with_parent,
            )
        )
        _wait_healthy(collector_url, procs[0])
        procs.append(
            subprocess.Popen(
                [*me, "dashboard", "--collector", collector_url, "--port", str(dashboard_port)],
                env=env,
                preexec_fn=_die_with_parent,
            )
        )
        console.print(
            f"[bold]collector[/bold]  {collector_url}  (OTLP/HTTP /v1/traces, query API /api/v1/runs; OTLP/gRPC :{grpc_port})"
        )
        console.print(f"[bold]dashboard[/bold]  http://{config.DEFAULT_HOST}:{dashboard_port}")
        console.print(f"[bold]store[/bold]      {escape(str(db))}")
        if rules is not None:
            console.print(f"[bold]rules[/bold]      {escape(str(rules))}")
        seed = 7
        if demo:
            console.print(f"sending {demo_runs} demo runs ...")
            sent = subprocess.run(
                [*me, "demo", "--endpoint", collector_url, "--runs", str(demo_runs), "--seed", str(seed)],
                env=env,
                check=False,
            )
            if sent.returncode == 0:
                console.print("demo traffic sent; press Ctrl-C to stop")
            else:
                err.print(
                    "[red]error:[/red] the demo traffic did not arrive (see above); the collector and dashboard "
                    "keep running, press Ctrl-C to stop",
                    highlight=False,
                )
        next_demo = time.monotonic() + demo_every if demo and demo_every else None
        while True:
            time.sleep(1.0)  # a child that dies is noticed within a second, not at the next demo batch
            exited = [p for p in procs if p.poll() is not None]
            if exited:
                raise fail(f"a child process exited (code {exited[0].returncode}); stopping")
            if next_demo is not None and time.monotonic() >= next_demo:
                next_demo = time.monotonic() + demo_every
                seed += 1
                subprocess.run(
                    [*me, "demo", "--endpoint", collector_url, "--runs", "8", "--seed", str(seed)],
                    env=env,
                    check=False,
                    stdout=subprocess.DEVNULL,
                )
    except KeyboardInterrupt:
        console.print("stopping ...")
    finally:
        stop_all()


# The packages of the extras (pyproject.toml), by their import names: a command whose package is
# missing says which extra to install instead of a traceback.
_EXTRAS = {
    "dashboard": ("streamlit", "altair", "pandas"),
    "collector": (
        "duckdb",
        "pyarrow",
        "starlette",
        "uvicorn",
        "grpc",
        "sqlalchemy",
        "alembic",
        "duckdb_engine",
        "sqlglot",
        "genai_prices",
        "yaml",
        "google",
        "opentelemetry.proto",
    ),
}


def _extra_for(missing: str) -> str | None:
    return next(
        (extra for extra, names in _EXTRAS.items() if any(missing == n or missing.startswith(n + ".") for n in names)),
        None,
    )


class _ReaderGone:
    """``sys.stdout`` that, once its reader has gone (``loopsight runs --json | head -1``), sends
    the rest to /dev/null: the command runs to its end and exits with its own code (``alerts
    check`` still says 1 only when a rule fires), instead of a traceback or click's exit 1."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _to_devnull(self) -> None:  # the Python docs' "Note on SIGPIPE"
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()


def main() -> None:
    """Console-script entry point."""
    sys.stdout = cast(TextIO, _ReaderGone(sys.stdout))
    try:
        app()
    except ModuleNotFoundError as exc:
        extra = _extra_for(exc.name or "")
        if extra is None:
            raise
        err.print(
            escape(
                f"error: this command needs the {extra} extra (no module {exc.name!r}): pip install 'loopsight[{extra}]'"
            )
        )
        raise SystemExit(1) from None
