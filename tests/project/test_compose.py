"""docker-compose.yml and the Dockerfile only use commands and flags the CLI really has."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml

from loopsight.cli import app

ROOT = Path(__file__).resolve().parents[2]


def parse_cli(args: list[str]):  # -> typer's click Context
    """Parse ``loopsight <args>`` the way the CLI would (all options validated), without running it."""
    ctx = typer.main.get_command(app).make_context("loopsight", list(args))
    while hasattr(ctx.command, "resolve_command"):
        name, command, rest = ctx.command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


def compose_commands() -> list[tuple[str, list[str]]]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return [(name, svc["command"]) for name, svc in compose["services"].items() if "command" in svc]


def test_compose_has_collector_and_dashboard_sharing_a_volume() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"collector", "dashboard"} <= set(services)
    volumes = [set(v.split(":")[0] for v in services[s]["volumes"]) for s in ("collector", "dashboard")]
    assert volumes[0] & volumes[1], "collector and dashboard must share a volume"
    for name in ("collector", "dashboard"):
        assert services[name].get("build") == "." or services[name].get("image")


@pytest.mark.parametrize(("service", "command"), compose_commands())
def test_compose_commands_are_real_cli_commands(service: str, command: list[str]) -> None:
    ctx = parse_cli(command)
    assert ctx.info_name == command[0]


def test_a_wrong_flag_is_rejected_by_the_same_check() -> None:
    for args in (["collector", "--no-such-flag", "1"], ["no-such-command"], ["collector", "--http-port", "x"]):
        with pytest.raises(Exception) as info:
            parse_cli(args)
        assert type(info.value).__name__ in {"NoSuchOption", "UsageError", "BadParameter"}, info.value


def test_dockerfile_default_command_is_real() -> None:
    text = (ROOT / "Dockerfile").read_text()
    cmd_line = next(line for line in text.splitlines() if line.startswith("CMD "))
    import json

    parse_cli(json.loads(cmd_line[4:]))
