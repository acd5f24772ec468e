"""How a command's ending becomes the process's exit code and one clear message.

Shared by the full command line (cli/main.py, on typer) and the quick
commands (cli/quick.py, without it), so a failure reads the same either
way: expected failures print one ``memlane: error:`` line and a hint on
stderr instead of a traceback; tracebacks are for bugs.
"""

from __future__ import annotations

import errno
import sqlite3
import sys
from collections.abc import Callable


def guarded(command: Callable[[], int]) -> int:
    """Run *command*; its exit code, or the code and message of an expected failure."""
    from memlane.core.errors import MemlaneError

    try:
        return command()
    except MemlaneError as exc:
        # Messages may quote what the user typed: never a secret on the terminal.
        sys.stderr.write(f"memlane: error: {_redacted(exc.message)}\n")
        if exc.hint:
            sys.stderr.write(f"  {_redacted(exc.hint)}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("memlane: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`memlane ... | head -1`): no message, but the
        # output was cut short, so status 1, as Python, click and rich (which
        # prints --help) give it.
        discard_stdout()
        return 1
    except UnicodeError as exc:
        return fail(
            f"the input is not valid UTF-8 text ({getattr(exc, 'reason', exc)})",
            "re-encode it as UTF-8 and try again; nothing was written",
        )
    except OSError as exc:
        return _os_error(exc)
    except sqlite3.Error as exc:
        return fail(
            f"the index database failed: {exc}",
            "`memlane status` shows the index state; `memlane reindex` rebuilds it from markdown",
        )


def _os_error(exc: OSError) -> int:
    """The environment, not memlane: a read-only or missing directory, a full disk."""
    from memlane.core.diskspace import disk_full_error, is_disk_full

    if is_disk_full(exc) and exc.filename:
        full = disk_full_error(exc.filename, "it could not be written")
        return fail(full.message, full.hint or "")
    if is_disk_full(exc):
        return fail(
            "the disk is full: the command could not write what it needed",
            "free some space (`df -h` shows how much is left) and try again",
        )
    if exc.errno == errno.EROFS:
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(
            f"the file system is read-only{where}: the command could not write",
            "remount it writable, or set MEMLANE_HOME / MEMSEARCH_DIR to a writable place",
        )
    where = f": {exc.filename}" if exc.filename else ""
    return fail(
        f"{exc.strerror or exc}{where}",
        "check that the path is writable by your user; MEMLANE_HOME moves memlane's "
        "own files (index, config) elsewhere",
    )


def discard_stdout() -> None:
    """Point a real process's stdout at /dev/null after its reader closed the pipe.

    Python flushes stdout at exit; into the closed pipe that flush would fail
    once more and print "Exception ignored ... BrokenPipeError". An in-process
    caller's replacement stream (``sys.stdout`` is not ``sys.__stdout__``) is
    left alone.
    """
    import os

    if sys.stdout is not sys.__stdout__ or sys.__stdout__ is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.__stdout__.fileno())
    finally:
        os.close(devnull)


def _redacted(text: str) -> str:
    from memlane.store.redaction import redact

    return redact(text).text


def fail(message: str, hint: str) -> int:
    sys.stderr.write(f"memlane: error: {message}\n  {hint}\n")
    return 1
