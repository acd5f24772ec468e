"""Checking a request's params, and the ``cli`` / ``cli.job`` requests (hosts/server/rpc.py).

``cli`` runs one ``memlane`` command line inside the engine, with the
project's memory already open (pi's ``/memory`` subcommands: no process
starts); with ``detach`` it starts the command on a thread of its own and
answers at once, and ``cli.job`` tells how far it got and, once done, what
it printed. The runner itself is hosts/server/commands.py.
"""

from __future__ import annotations

from typing import Any, Protocol

from memlane.hosts.jsonrpc import APPLICATION_ERROR, METHOD_NOT_FOUND, RpcError


class ParamsError(Exception):
    """A request's params are not what its method takes (INVALID_PARAMS)."""


def obj_params(params: Any, method: str) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ParamsError(f"{method}: params must be an object")
    return params


def str_param(
    params: dict[str, Any], key: str, method: str, *, required: bool = False
) -> str | None:
    value = params.get(key)
    if value is None:
        if required:
            raise ParamsError(f"{method}: missing required param {key!r}")
        return None
    if not isinstance(value, str):
        raise ParamsError(f"{method}: {key} must be a string, got {value!r}")
    return value


class CommandRunner(Protocol):
    """Runs one ``memlane`` command line inside the engine (hosts/server/commands.py),
    or starts it in the background and tells how far it got."""

    def __call__(
        self, argv: list[str], cwd: str, stdin: str | None, workdir: str | None = None
    ) -> dict[str, Any]: ...

    def start(self, argv: list[str], cwd: str, workdir: str | None = None) -> dict[str, Any]: ...

    def job(self, job_id: str) -> dict[str, Any] | None: ...


def run(commands: CommandRunner | None, directory: str, params: dict[str, Any]) -> dict[str, Any]:
    """``cli``: the command's output, or (detached) the job it started."""
    if commands is None:
        raise RpcError(METHOD_NOT_FOUND, "this engine runs no commands")
    argv = params.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ParamsError("cli: argv must be a list of strings")
    stdin = str_param(params, "stdin", "cli")
    workdir = str_param(params, "workdir", "cli")
    detach = params.get("detach", False)
    if not isinstance(detach, bool):
        raise ParamsError("cli: detach must be a boolean")
    if detach:
        # A long command (pi's /memory reindex) must not hold up the
        # connection's later requests: it runs on, cli.job tells how far.
        return commands.start(argv, directory, workdir)
    return commands(argv, directory, stdin, workdir)


def job(commands: CommandRunner | None, params: dict[str, Any]) -> dict[str, Any]:
    """``cli.job``: how far a detached command got, and its output once done."""
    if commands is None:
        raise RpcError(METHOD_NOT_FOUND, "this engine runs no commands")
    job_id = str_param(params, "job", "cli.job", required=True)
    assert job_id is not None
    state = commands.job(job_id)
    if state is None:
        raise RpcError(
            APPLICATION_ERROR,
            f"no command job {job_id!r} (the engine restarted, or it finished long ago)",
            {"hint": "start the command again"},
        )
    return state
