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
    global_: Annotated[
        bool, typer.Option("--global", help="Write the global config.toml (the default).")
    ] = False,
    unset: Annotated[bool, typer.Option("--unset", help="Remove the setting.")] = False,
) -> None:
    """Set a value in the global config (or the project's with --project).

    A project file you trusted stays trusted: the change is your own. Running
    agent sessions follow a setting that applies at once from their next
    prompt; any other applies from the next session.
    """
    from memlane.core.config import KEYS, PROJECT_CONFIG_NAME, load_config, set_trusted, set_value
    from memlane.core.config.keys import unknown_key
    from memlane.core.config.trust import project_file
    from memlane.core.errors import ConfigError
    from memlane.core.paths import global_config_path

    if value is None and not unset:
        raise ConfigError(f"no value given for {key}", "pass a value, or --unset to remove it")
    if project and global_:
        raise ConfigError("--project and --global name two files", "pass one of them")
    spec = KEYS.get(key)
    if spec is None:
        raise unknown_key(key)
    repo, _ = _load(ctx)
    path = repo / PROJECT_CONFIG_NAME if project else global_config_path()
    # A trusted project file (or none yet) is trusted as written: trust
    # guards against a file someone else wrote, and this change is yours.
    before = project_file(repo) if project else None
    keep_trust = project and (before is None or before.trusted)
    set_value(path, key, None if unset else value)
    if keep_trust:
        set_trusted(repo, True)
    when = (
        "running sessions follow it from their next prompt"
        if spec.live
        else "it applies from the next session"
    )
    typer.echo(f"{'Removed' if unset else 'Set'} {key} in {path} ({when}).")
    from memlane.cli.context import notice

    if project and not keep_trust:
        notice(f"{path} is not read until you trust it: check it and run `memlane trust`")
        return
    effective = load_config(repo).values[key]
    written_layer = "project" if project else "global"
    if not unset and effective.layer != written_layer and effective.layer != "default":
        # A trusted project file or the environment outranks the file written.
        notice(
            f"but here {key} is {effective.value!r} from the {effective.layer} layer, which "
            f"outranks the {written_layer} file (see `memlane config list --resolved`)"
        )


@config_app.command("describe")
def describe(
    ctx: typer.Context,
    key: Annotated[str | None, typer.Argument(help="section.key (default: every setting)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Each setting's value, where it came from, what it accepts and when a change applies."""
    from memlane.cli.settings_view import describe_settings, render_described

    repo, cfg = _load(ctx)
    data = describe_settings(repo, cfg, key)
    if as_json:
        print_json(data)
    else:
        typer.echo(render_described(data))


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
