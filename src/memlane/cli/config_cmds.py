"""``memlane config`` and ``memlane trust``: the layered configuration."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.context import print_json, state

if TYPE_CHECKING:
    from memlane.core.config import Config

config_app = typer.Typer(
    help="Show and change settings (defaults → global → trusted project → environment).",
    no_args_is_help=True,
)


def _load(ctx: typer.Context) -> tuple[Path, Config]:
    from memlane.core.config import load_config
    from memlane.core.scope import repository_dir_of

    base = state(ctx).directory
    repo = repository_dir_of(base if base else Path.cwd())
    return repo, load_config(repo)


@config_app.command("list")
def list_(
    ctx: typer.Context,
    resolved: Annotated[
        bool, typer.Option("--resolved", help="Show each value and the layer it came from.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List every setting (with --resolved: its value and where it came from)."""
    from memlane.core.config import KEYS

    _, cfg = _load(ctx)
    if as_json:
        print_json(
            {
                name: {"value": v.value, "layer": v.layer, "env": KEYS[name].env_name}
                for name, v in cfg.values.items()
            }
        )
        return
    for name, value in cfg.values.items():
        spec = KEYS[name]
        if resolved:
            shown = "(unset)" if value.value is None else repr(value.value)
            typer.echo(f"{name} = {shown}  [{value.layer}]")
        else:
            typer.echo(f"{name}  ({spec.env_name}): {spec.help}")
    for text in cfg.problems:
        typer.echo(f"problem: {text}")
    for text in cfg.notices:
        typer.echo(f"note: {text}")


@config_app.command("get")
def get(ctx: typer.Context, key: Annotated[str, typer.Argument(help="section.key")]) -> None:
    """Print one setting's resolved value."""
    from memlane.cli.context import notice

    _, cfg = _load(ctx)
    value = cfg.get(key)
    for text in cfg.problems:
        if f" {key} = " in text:
            notice(text)  # the value printed is not the one the file asked for
    typer.echo("" if value is None else str(value))


@config_app.command("set")
def set_(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="section.key")],
    value: Annotated[str | None, typer.Argument(help="The new value (omit with --unset).")] = None,
    project: Annotated[
        bool, typer.Option("--project", help="Write the project's .memlane.toml instead.")
    ] = False,
    unset: Annotated[bool, typer.Option("--unset", help="Remove the setting.")] = False,
) -> None:
    """Set a value in the global config (or the project's with --project)."""
    from memlane.core.config import PROJECT_CONFIG_NAME, set_value
    from memlane.core.errors import ConfigError
    from memlane.core.paths import global_config_path

    if value is None and not unset:
        raise ConfigError(f"no value given for {key}", "pass a value, or --unset to remove it")
    repo, _ = _load(ctx)
    path = repo / PROJECT_CONFIG_NAME if project else global_config_path()
    set_value(path, key, None if unset else value)
    typer.echo(f"{'Removed' if unset else 'Set'} {key} in {path}")


@config_app.command("reference")
def reference() -> None:
    """Print the configuration reference (docs/configuration.md) from the settings' declarations."""
    from memlane.core.config.reference import render_reference

    typer.echo(render_reference(), nl=False)


def trust(
    ctx: typer.Context,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting this project.")] = False,
) -> None:
    """Trust this project's .memlane.toml as it is now, so it is read (it can change where data goes).

    Editing the file afterwards withdraws the trust until you run this again.
    """
    from memlane.core.config import set_trusted

    repo, _ = _load(ctx)
    set_trusted(repo, not revoke)
    typer.echo(f"{'No longer trusting' if revoke else 'Trusting'} {repo}")
