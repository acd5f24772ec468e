"""``memlane migrate --to URI``: copy this project's index to another backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.context import ProgressBar, notice, open_memory, print_json

if TYPE_CHECKING:
    from memlane.engine.migrate import MigrationReport


def migrate(
    ctx: typer.Context,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to: sqlite (memlane's index directory), sqlite:DIR, a Milvus Lite path "
            "(e.g. ~/.memsearch/milvus.db), http(s)://host:19530 for a Milvus server, or a "
            "Zilliz Cloud endpoint.",
        ),
    ],
    collection: Annotated[
        str | None,
        typer.Option(
            "--collection", help="Collection name at the target (default: the project's)."
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Token for a Milvus server or Zilliz Cloud, as env:VAR (never the token itself).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Copy this project's index to another backend (vectors reused when the model matches).

    The copy is built from the markdown store, so it holds exactly what the
    store does; the current index and the configuration stay as they are, and
    the commands that switch over are printed at the end.
    """
    from memlane.core.config import SECRET_PREFIX
    from memlane.core.errors import ConfigError
    from memlane.engine.migrate import migrate as run_migration
    from memlane.engine.migrate import switch_commands, target_settings

    resolved_token: str | None = None
    if token is not None:
        if not token.startswith(SECRET_PREFIX):
            raise ConfigError(
                "--token takes a reference to an environment variable, not the token itself",
                hint="export the token and pass --token env:VARIABLE",
            )
        import os

        variable = token.removeprefix(SECRET_PREFIX)
        resolved_token = os.environ.get(variable)
        if not resolved_token:
            raise ConfigError(
                f"--token names {variable}, which is not set",
                hint=f"export {variable}=<token> and run the command again",
            )
    with open_memory(ctx) as mem:
        target = target_settings(mem.config.index, to, collection=collection, token=resolved_token)
        with ProgressBar("migrating") as bar:
            report = run_migration(mem, target, bar)
        report.switch = switch_commands(target, token)
    _show(report, as_json)


def _show(report: MigrationReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_json())
        return
    for text in report.notices:
        notice(text)
    typer.echo(
        f"migrated {report.files} files into {report.target_uri} (collection "
        f"{report.collection}): {report.chunks} chunks, {report.reused} vectors reused, "
        f"{report.embedded} embedded"
        + (f", {report.unembedded} without a vector" if report.unembedded else "")
        + f" ({report.seconds:.1f} s)"
    )
    typer.echo("The project still uses its current index. To switch to the new one:")
    for command in report.switch:
        typer.echo(f"  {command}")


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
