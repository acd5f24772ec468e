"""The ``memlane`` command's entry point: the commands that must start in milliseconds.

Importing the command-line framework and the engine costs a few hundred
milliseconds; loading the model, more. Before any of that, this module
looks at the command line:

- ``memlane sidecar`` (started by pi for each session) relays pi's protocol
  to the warm engine (hosts/pi/bridge.py);
- a quick command (``search``, ``expand``, ``write``, ``transcript``,
  ``status``, ``scope``) is handed to the engine when one is running (or
  ``engine.cli_starts`` asks to start one), which runs the same command
  code with its model already loaded (hosts/server/commands.py);

and everything else runs here in full (cli/main.py). A quick command no
engine serves runs here too, without the command-line framework when its
arguments are in a plain form (cli/quick.py: the same command code, half a
second of imports less), else in full, exactly as it would without an engine.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not typing's: this module starts every memlane command
if TYPE_CHECKING:
    from collections.abc import Sequence

#: Commands the engine may run for the CLI: their output depends only on the
#: project, the arguments and the standard input, never on this process.
DELEGATED = frozenset({"search", "expand", "write", "transcript", "status", "scope"})
#: Options that make a command ask on the terminal or print help: run here.
LOCAL_OPTIONS = frozenset({"-h", "--help", "--fix", "--version"})
#: How long a delegated command may wait to reach a running engine.
REACH_S = 2.0
#: How long it may wait for an engine it starts (``engine.cli_starts``).
START_S = 30.0
#: How long the engine may take to answer (a first search loads the model).
ANSWER_S = 600.0
CLIENT = "cli"


def _split(argv: Sequence[str]) -> tuple[str | None, str | None, list[str]]:
    """(the global ``-C`` directory, the command, the arguments after it)."""
    directory: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-C" and i + 1 < len(argv):
            directory, i = argv[i + 1], i + 2
        elif arg.startswith("-C") and len(arg) > 2:
            directory, i = arg[2:].removeprefix("="), i + 1
        elif arg.startswith("-"):
            return directory, None, list(argv[i:])  # --version, --help: the full CLI
        else:
            return directory, arg, list(argv[i + 1 :])
    return directory, None, []


def _sub_directory(args: list[str]) -> str | None:
    """A command's own ``-C DIR`` (``memlane sidecar -C DIR``, ``memlane mcp -C DIR``)."""
    for i, arg in enumerate(args):
        if arg == "-C" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("-C") and len(arg) > 2:
            return arg[2:].removeprefix("=")
    return None


def _portable(args: list[str]) -> bool:
    """Whether the engine may run these arguments: no relative path among them
    (the engine's working directory is not ours), nothing asked on the terminal."""
    for arg in args:
        if arg in LOCAL_OPTIONS or arg.startswith("--help"):
            return False
        if arg == "-" and sys.stdin.isatty():
            return False  # typed at the terminal: read here, as it is typed
        if not arg.startswith("-") and not os.path.isabs(arg) and os.path.exists(arg):
            return False
    return True


def _cli_starts_engine() -> bool:
    """``engine.cli_starts``: the user's setting (global file and environment)."""
    from memlane.core.config.layers import load_config
    from memlane.core.errors import ConfigError

    try:
        return load_config(None).get("engine.cli_starts") is True
    except ConfigError:
        return False  # the full command reports the bad setting


def delegate(directory: str, command: str, args: list[str]) -> int | None:
    """Run the command in the engine; its exit code, or None when no engine could
    run it (the caller runs it here)."""
    from memlane.core import link

    if link.engine_disabled():
        return None
    place = link.Place()
    started = time.monotonic()
    try:
        client = link.Client.open(place, CLIENT, directory, started + REACH_S, start=False)
    except link.EngineUnavailable:
        if not _cli_starts_engine():
            return None
        try:
            client = link.Client.open(place, CLIENT, directory, started + START_S, start=True)
        except link.EngineUnavailable as exc:
            took = time.monotonic() - started
            link.record_failure(place, CLIENT, command, "failed", str(exc), took)
            return None
    stdin = sys.stdin.read() if "-" in args else None
    try:
        with client:
            params = {"argv": [command, *args], "stdin": stdin, "workdir": os.getcwd()}
            answer = client.call("cli", params, ANSWER_S)
    except (link.EngineUnavailable, link.EngineError) as exc:
        took = time.monotonic() - started
        link.record_failure(place, CLIENT, command, "failed", str(exc), took)
        if stdin is not None:
            sys.stdin = _Replay(stdin)
        return None
    if not isinstance(answer, dict):
        return None
    try:
        sys.stderr.write(str(answer.get("stderr") or ""))
        sys.stdout.write(str(answer.get("stdout") or ""))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`memlane search … | head -1`): cut short, as the full CLI says.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        return 1
    code = answer.get("code")
    return code if isinstance(code, int) else 1


class _Replay:
    """Standard input already read, for the command run here after all."""

    def __init__(self, text: str) -> None:
        import io

        self._stream = io.StringIO(text)

    def read(self, size: int = -1) -> str:
        return self._stream.read(size)

    def readline(self, size: int = -1) -> str:
        return self._stream.readline(size)

    def isatty(self) -> bool:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    global_dir, command, rest = _split(args)
    directory = os.path.abspath(global_dir or ".")
    if command == "sidecar":
        from memlane.hosts.pi.bridge import relay

        code = relay(os.path.abspath(_sub_directory(rest) or directory))
        if code is not None:
            return code
    elif command in DELEGATED:
        if _portable(rest):
            code = delegate(directory, command, rest)
            if code is not None:
                return code
        # No engine: the quick commands run here without typer (cli/quick.py).
        from memlane.cli.quick import run as run_quick

        code = run_quick(args)
        if code is not None:
            return code
    from memlane.cli.main import main as full

    return full(args)


def run() -> None:
    """Console-script entry: the command line's command, its exit code as the process's."""
    from memlane.core.process import exit_process

    exit_process(main())
