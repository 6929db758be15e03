"""``loopsight alerts check``: evaluate every rule once and print its state (for cron and CI).

A one-shot check keeps no state: a rule whose condition holds now is reported as firing
(``for`` and ``cooldown`` need the collector's evaluator, which remembers). Exit codes:
0 nothing fires, 1 at least one rule fires, 2 the rules file or the data source is unusable.

Example:
    >>> check("alerts.toml", db="./loopsight.duckdb")  # doctest: +SKIP
    0
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loopsight.alerts.evaluate import Verdict, judge
from loopsight.alerts.evaluator import utcnow
from loopsight.alerts.rules import Rule, RulesError, load_rules
from loopsight.client import SourceError, open_source
from loopsight.config import DEFAULT_DB, env_str
from loopsight.format import count, text


def _table(results: list[tuple[Rule, Verdict]], source: str, now: datetime) -> Table:
    table = Table(title=f"alert rules at {now.isoformat(timespec='seconds')}Z ({source})")
    for column in ("rule", "metric", "state", "value", "condition", "samples", "window", "why", "example runs"):
        table.add_column(column, overflow="fold")
    for rule, verdict in results:
        state = "[bold red]FIRING[/]" if verdict.met else "[green]ok[/]"
        filters = ", ".join(f"{k}={v}" for k, v in rule.spec.filters().items())
        condition = f"{rule.op} {text(rule.threshold)}" + (
            f", x{rule.factor:g} baseline {text(verdict.baseline_value)}" if rule.spike else ""
        )
        table.add_row(
            escape(rule.name),
            escape(rule.metric + (f" ({filters})" if filters else "")),
            state,
            text(verdict.current.value),
            condition,
            count(verdict.current.samples),
            rule.describe()["window"],
            escape(verdict.reason),
            escape("\n".join(verdict.current.examples[:3])),
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
        out.print(f"[bold red]error:[/] invalid rules file: {escape(str(exc))}", markup=True, highlight=False)
        return 2
    now = utcnow()
    source = open_source(
        collector=collector,
        db=db or (None if store or collector else env_str("DB", DEFAULT_DB)),
        store=store,
        token=token,
    )
    try:
        source.check()
        results = [(rule, judge(source, rule, now)) for rule in rules]
    except SourceError as exc:
        out.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False)
        return 2
    where = source.target
    out.print(_table(results, where, now))
    firing = [rule.name for rule, verdict in results if verdict.met]
    if firing:
        out.print(f"[bold red]{len(firing)} rule(s) firing:[/] {escape(', '.join(firing))}", highlight=False)
        return 1
    out.print(f"[green]no rule fires[/] ({len(results)} checked)", highlight=False)
    return 0
