"""``loopsight alerts check``: evaluate every rule once and print its state (for cron and CI).

A one-shot check keeps no state: a rule whose condition holds now is reported as firing
(``for`` and ``cooldown`` need the collector's evaluator, which remembers). Exit codes:
0 nothing fires, 1 at least one rule fires, 2 the rules file or the data source is unusable.

Example:
    >>> check("alerts.toml", db="./loopsight.duckdb")  # doctest: +SKIP
    0
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import duckdb
from rich.console import Console
from rich.table import Table

from loopsight.alerts.evaluate import Verdict, judge
from loopsight.alerts.evaluator import utcnow
from loopsight.alerts.rules import Rule, RulesError, load_rules
from loopsight.alerts.sources import ApiSource, DuckDBSource, SourceError
from loopsight.config import DEFAULT_DB, env_str
from loopsight.stores import StoreError, StoreURLError, open_reader, parse_store_url
from loopsight.stores.clickhouse import ClickHouseError


def _open_db(path: str) -> duckdb.DuckDBPyConnection:
    if not os.path.exists(path):
        raise SourceError(f"database {path} does not exist (pass --db PATH or --collector URL)")
    try:
        return duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise SourceError(f"{path} is held by a running collector: use --collector URL instead ({text})") from None
        raise SourceError(f"cannot open {path}: {text}") from None


def _redacted(url: str) -> str:
    try:
        return parse_store_url(url).redacted()
    except StoreURLError:
        return url


def _open_store(url: str) -> Any:
    """A read connection for store ``url``; an unusable URL or store is a ``SourceError``."""
    try:
        parsed = parse_store_url(url)
        if parsed.scheme == "duckdb":
            return _open_db(parsed.path)
        return open_reader(parsed)
    except (StoreURLError, StoreError) as exc:
        raise SourceError(str(exc)) from None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _table(results: list[tuple[Rule, Verdict]], source: str, now: datetime) -> Table:
    table = Table(title=f"alert rules at {now.isoformat(timespec='seconds')}Z ({source})")
    for column in ("rule", "metric", "state", "value", "condition", "samples", "window", "why", "example runs"):
        table.add_column(column, overflow="fold")
    for rule, verdict in results:
        state = "[bold red]FIRING[/]" if verdict.met else "[green]ok[/]"
        filters = ", ".join(f"{k}={v}" for k, v in rule.spec.filters().items())
        condition = f"{rule.op} {rule.threshold:g}" + (
            f", x{rule.factor:g} baseline {_fmt(verdict.baseline_value)}" if rule.spike else ""
        )
        table.add_row(
            rule.name,
            rule.metric + (f" ({filters})" if filters else ""),
            state,
            _fmt(verdict.current.value),
            condition,
            str(verdict.current.samples),
            rule.describe()["window"],
            verdict.reason,
            "\n".join(verdict.current.examples[:3]),
        )
    return table


def check(
    rules_path: str,
    collector: str | None = None,
    db: str | None = None,
    token: str | None = None,
    console: Any = None,
    store: str | None = None,
) -> int:
    """Evaluate ``rules_path`` once against ``collector`` (query API), ``store`` (a store URL:
    ``clickhouse://…``, ``chdb:///dir``, ``duckdb:///file``) or ``db`` (read-only file).

    Returns 1 if any rule fires, 0 otherwise, 2 (with a message) when the rules file is
    invalid or the collector / file cannot be read.

    Example:
        >>> check("alerts.toml", collector="http://127.0.0.1:4318")  # doctest: +SKIP
        1
    """
    out = console or Console()
    try:
        rules = load_rules(rules_path)
    except RulesError as exc:
        out.print(f"[bold red]error:[/] invalid rules file: {exc}", markup=True, highlight=False)
        return 2
    now = utcnow()
    con: duckdb.DuckDBPyConnection | None = None
    api: ApiSource | None = None
    try:
        if collector:
            api = ApiSource(collector, token)
            source: Any = api
            where = collector
        elif store:
            con = _open_store(store)
            source = DuckDBSource(con)
            where = _redacted(store)
        else:
            path = db or env_str("DB", DEFAULT_DB) or DEFAULT_DB
            con = _open_db(path)
            source = DuckDBSource(con)
            where = path
        results = [(rule, judge(source, rule, now)) for rule in rules]
    except SourceError as exc:
        out.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
        return 2
    except duckdb.Error as exc:
        out.print(f"[bold red]error:[/] cannot evaluate the rules on {db}: {exc}", markup=True, highlight=False)
        return 2
    except ClickHouseError as exc:
        out.print(
            f"[bold red]error:[/] cannot evaluate the rules on {_redacted(store or '')}: {exc}",
            markup=True,
            highlight=False,
        )
        return 2
    finally:
        if con is not None:
            con.close()
        if api is not None:
            api.close()
    out.print(_table(results, where, now))
    firing = [rule.name for rule, verdict in results if verdict.met]
    if firing:
        out.print(f"[bold red]{len(firing)} rule(s) firing:[/] {', '.join(firing)}", highlight=False)
        return 1
    out.print(f"[green]no rule fires[/] ({len(results)} checked)", highlight=False)
    return 0
