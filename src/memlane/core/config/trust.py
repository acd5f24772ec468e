"""Project-config trust: a repository's ``.memlane.toml`` is read only once
the user trusted that directory *and* that file's content.

A project file can move memory or send it to another endpoint, so a clone
must not apply it silently; trust covers the file as it was when
``memlane trust`` ran, the way direnv's ``allow`` does.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from memlane.core.atomic import write_atomic
from memlane.core.errors import ConfigError
from memlane.core.paths import trust_file_path
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file

PROJECT_CONFIG_NAME = ".memlane.toml"
# A project config is a few hundred bytes; anything past this is not one.
CONFIG_MAX_BYTES = 1 << 20


def _file_digest(project_dir: str | Path) -> str | None:
    """sha256 of the project's .memlane.toml, or None when there is none."""
    path = Path(project_dir) / PROJECT_CONFIG_NAME
    try:
        # A repository can commit .memlane.toml as a link to /dev/zero or a
        # FIFO: read only a regular file, never blocking, capped.
        data = read_regular_file(path, max_bytes=CONFIG_MAX_BYTES, what="project config")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (NotRegularFileError, FileTooLargeError) as exc:
        raise ConfigError(exc.message, exc.hint) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return hashlib.sha256(data).hexdigest()


def trusted_projects() -> dict[str, str | None]:
    """Trusted project directories, each with the digest of the file it trusted.

    Trust covers the file as it was when `memlane trust` ran (as direnv's
    `allow` does): a `.memlane.toml` changed afterwards, e.g. by a pull,
    can move memory or send it elsewhere, so it is not read again until the
    user trusts the new content.
    """
    path = trust_file_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        raise ConfigError(
            f"{path} is unreadable or not JSON", "remove it and run `memlane trust` again"
        ) from None
    if isinstance(data, list):  # the first format: directories only, no digest
        return {str(p): "" for p in data}
    if not isinstance(data, dict) or not all(isinstance(v, str | None) for v in data.values()):
        raise ConfigError(
            f"{path} must map trusted directories to file digests",
            "remove it and run `memlane trust` again",
        )
    return {str(k): v for k, v in data.items()}


def set_trusted(project_dir: Path, trusted: bool) -> None:
    path = trust_file_path()
    current = trusted_projects()
    real = os.path.realpath(project_dir)
    if trusted:
        current[real] = _file_digest(real)
    else:
        current.pop(real, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(dict(sorted(current.items())), indent=2) + "\n")


@dataclass(frozen=True)
class ProjectFile:
    """A repository's ``.memlane.toml`` and whether its layer may be read."""

    path: Path
    trusted: bool
    notice: str | None  # why it was not read, for the user; None when trusted


def project_file(repository_dir: Path) -> ProjectFile | None:
    """The repository's project config and its trust, or None when it has none."""
    candidate = repository_dir / PROJECT_CONFIG_NAME
    if not candidate.is_file():
        return None
    real = os.path.realpath(repository_dir)
    known = trusted_projects()
    if real in known and known[real] == _file_digest(real):
        return ProjectFile(candidate, trusted=True, notice=None)
    if real in known:
        return ProjectFile(
            candidate,
            trusted=False,
            notice=(
                f"{candidate} changed since you trusted it, so it was not read; "
                "check what it now sets and run `memlane trust` again to use it"
            ),
        )
    return ProjectFile(
        candidate,
        trusted=False,
        notice=(
            f"{candidate} was not read because this project is not trusted; "
            "run `memlane trust` to use it"
        ),
    )
