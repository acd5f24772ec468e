"""``memlane install pi`` / ``memlane uninstall pi``: register the pi package in pi's settings.

pi loads a local package listed in the ``packages`` array of its settings
file: the agent directory's ``settings.json`` (``$PI_CODING_AGENT_DIR``,
default ``~/.pi/agent``) or, with ``--project``, the project's
``.pi/settings.json`` (read by pi once the project is trusted).

Install adds the absolute path of the package directory to that array and
writes ``memlane.json`` next to the settings file::

    {"command": "/abs/venv/bin/memlane", "package": "/abs/.../integrations/pi", ...}

The TypeScript extension reads ``command`` from the project's
``.pi/memlane.json``, else the agent directory's, and runs that memlane (so a
memlane living in a virtualenv works when pi's shell does not activate it);
without a record, or when the recorded file is gone, it runs ``memlane`` from
PATH. ``memlane.json`` also remembers whether install created the settings
file or its ``packages`` key, so uninstall reverts exactly what install did.

Settings are edited as a JSON round trip that keeps key order, values and the
file's indentation (``hosts/settings_json.py``): every other setting is left as it was.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.errors import ConfigError, MemlaneError
from memlane.hosts.settings_json import read_record
from memlane.hosts.settings_json import read_settings as _read_settings
from memlane.hosts.settings_json import write_json as _write_json

#: The file beside pi's settings that names the memlane the package runs.
RECORD_NAME = "memlane.json"
SETTINGS_NAME = "settings.json"
#: pi's project configuration directory (pi's CONFIG_DIR_NAME).
PI_PROJECT_DIR = ".pi"


@dataclass
class InstallReport:
    settings: Path
    record: Path
    package: Path
    command: str | None
    changed: bool
    lines: list[str] = field(default_factory=list)


def agent_dir(env: dict[str, str] | None = None) -> Path:
    """pi's agent directory: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent`` (transcripts/locate.py)."""
    from memlane.transcripts.locate import pi_agent_dir

    return pi_agent_dir(env).absolute()


def settings_dir(project: Path | None, env: dict[str, str] | None = None) -> Path:
    """Where the settings file lives: ``<project>/.pi`` or the agent directory."""
    if project is not None:
        return project.absolute() / PI_PROJECT_DIR
    return agent_dir(env)


def package_dir() -> Path:
    """The pi package: ``integrations/pi`` of a source checkout, else the copy in the wheel."""
    here = Path(__file__).resolve()
    candidates = [
        here.parents[4] / "integrations" / "pi",  # <repo>/src/memlane/hosts/pi/install.py
        here.parents[2] / "integrations" / "pi",  # <site-packages>/memlane/integrations/pi
    ]
    for candidate in candidates:
        if (candidate / "package.json").is_file():
            return candidate
    raise MemlaneError(
        "the memlane pi package is missing from this installation",
        "reinstall memlane (`pip install --force-reinstall memlane`)",
    )


def memlane_executable() -> str | None:
    """The absolute path of the memlane being run, for pi to run later."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "memlane" and argv0.is_file():
        return str(argv0.absolute())
    beside = Path(sys.executable).parent / "memlane"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside.absolute())
    found = shutil.which("memlane")
    return str(Path(found).absolute()) if found else None


def _source_of(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("source"), str):
        return str(entry["source"])
    return None


def _is_package(entry: Any, base: Path, package: Path) -> bool:
    """Whether a ``packages`` entry names this package (pi resolves local paths from the settings dir)."""
    source = _source_of(entry)
    if source is None or source.startswith(("npm:", "git:", "http:", "https:", "ssh:")):
        return False
    path = Path(source).expanduser()
    if not path.is_absolute():
        path = base / path
    try:
        return path.resolve() == package.resolve()
    except OSError:
        return False


def install(
    project: Path | None = None,
    *,
    command: str | None = None,
    package: Path | None = None,
    env: dict[str, str] | None = None,
) -> InstallReport:
    """Add the pi package to pi's settings and record which memlane it runs. Idempotent."""
    from memlane.core.version import __version__

    pkg = (package or package_dir()).absolute()
    exe = command if command is not None else memlane_executable()
    base = settings_dir(project, env)
    settings_path = base / SETTINGS_NAME
    record_path = base / RECORD_NAME

    settings, indent, existed = _read_settings(settings_path)
    previous = read_record(record_path)
    packages = settings.get("packages")
    if packages is not None and not isinstance(packages, list):
        raise ConfigError(f"{settings_path}: packages is not a list", "fix the file first")

    lines: list[str] = []
    changed = False
    if packages is not None and any(_is_package(e, base, pkg) for e in packages):
        lines.append(f"pi package already listed in {settings_path}")
        created = previous.get("created", {"settings_file": False, "packages_key": False})
    else:
        created = {"settings_file": not existed, "packages_key": packages is None}
        if packages is None:
            settings["packages"] = [str(pkg)]
        else:
            packages.append(str(pkg))
        _write_json(settings_path, settings, indent)
        changed = True
        lines.append(f"added {pkg} to pi's packages in {settings_path}")

    record = {
        "command": exe,
        "package": str(pkg),
        "settings": str(settings_path),
        "created": created,
        "memlane_version": __version__,
    }
    if record != previous:
        _write_json(record_path, record)
        changed = True
    if exe:
        lines.append(f"recorded {exe} in {record_path}: the pi package runs this memlane")
    else:
        lines.append(
            f"no memlane executable found to record in {record_path}: "
            "the pi package will run `memlane` from PATH"
        )
    if project is not None:
        lines.append("pi reads project settings only once you trust the project")
    if changed:
        lines.append("restart pi (or /reload) to load it")
    return InstallReport(settings_path, record_path, pkg, exe, changed, lines)


def uninstall(
    project: Path | None = None,
    *,
    package: Path | None = None,
    env: dict[str, str] | None = None,
) -> InstallReport:
    """Revert ``install``: drop the package entry (and what install created) and the record."""
    base = settings_dir(project, env)
    settings_path = base / SETTINGS_NAME
    record_path = base / RECORD_NAME
    record = read_record(record_path)
    if package is not None:
        pkg = package.absolute()
    elif isinstance(record.get("package"), str):
        pkg = Path(record["package"])
    else:
        pkg = package_dir()
    raw_created = record.get("created")
    created: dict[str, Any] = raw_created if isinstance(raw_created, dict) else {}

    lines: list[str] = []
    changed = False
    settings, indent, existed = _read_settings(settings_path)
    packages = settings.get("packages")
    if existed and isinstance(packages, list):
        kept = [e for e in packages if not _is_package(e, base, pkg)]
        if len(kept) != len(packages):
            if kept or not created.get("packages_key"):
                settings["packages"] = kept
            else:
                del settings["packages"]
            if not settings and created.get("settings_file"):
                settings_path.unlink()
                lines.append(f"removed {settings_path} (install had created it)")
            else:
                _write_json(settings_path, settings, indent)
                lines.append(f"removed {pkg} from pi's packages in {settings_path}")
            changed = True
    if not changed:
        lines.append(f"the pi package was not listed in {settings_path}")
    if record_path.exists():
        record_path.unlink()
        lines.append(f"removed {record_path}")
        changed = True
    if changed:
        lines.append("restart pi (or /reload) to unload it")
    return InstallReport(settings_path, record_path, pkg, None, changed, lines)
