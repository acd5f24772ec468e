"""docs/python-api.md and the library surface say the same thing.

Every public member of ``Memory`` and ``Session`` (methods, properties and
the attributes an instance carries) and every name ``memlane`` exports is
in docs/python-api.md; every member the page's tables document exists; the
page's first example runs as written, against a project of its own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memlane
from helpers import make_project, open_memory, start_session
from memlane import Memory

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def _section(heading: str) -> str:
    """The page's text from *heading* to the next heading of the same level."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(heading)
    level = heading.split(" ")[0] + " "
    end = text.find("\n" + level, start + len(heading))
    return text[start : end if end != -1 else len(text)]


def _documented(section: str, owner: str) -> set[str]:
    """The members the section's tables name in their first column."""
    names = set()
    for line in section.splitlines():
        for cell in line.split("|")[1:2]:
            for found in re.findall(r"`([A-Za-z_][\w.]*)", cell):
                names.add(found.removeprefix(f"{owner}."))
    return names


def _public(instance: object) -> set[str]:
    cls = type(instance)
    members = {name for name in dir(cls) if not name.startswith("_")}
    return members | {name for name in vars(instance) if not name.startswith("_")}


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return open_memory(make_project(tmp_path))


def test_every_public_member_of_memory_is_documented_and_every_documented_one_exists(
    memory: Memory,
) -> None:
    documented = _documented(_section("## `Memory`"), "Memory")
    assert sorted(_public(memory) - documented) == []
    assert sorted(documented - _public(memory)) == []


def test_every_public_member_of_the_embedding_is_documented_in_its_row(memory: Memory) -> None:
    row = next(
        line for line in _section("## `Memory`").splitlines() if line.startswith("| `embedding`")
    )
    documented = set(re.findall(r"`([A-Za-z_]\w*)", row.split("|")[2]))
    assert sorted(_public(memory.embedding) - documented) == []


def test_every_public_member_of_session_is_documented_and_every_documented_one_exists(
    memory: Memory,
) -> None:
    session = start_session(memory)
    try:
        documented = _documented(_section("## `Session`"), "Session")
        assert sorted(_public(session) - documented) == []
        assert sorted(documented - _public(session)) == []
    finally:
        session.shutdown()


def test_every_exported_name_is_documented_and_importable() -> None:
    documented = _documented(_section("## What `memlane` exports"), "memlane")
    assert sorted(set(memlane.__all__) - documented) == []
    assert sorted(documented - set(memlane.__all__)) == []
    for name in memlane.__all__:
        assert getattr(memlane, name) is not None


def test_the_package_is_typed_and_importing_it_loads_nothing_else() -> None:
    assert (Path(memlane.__file__).parent / "py.typed").is_file()
    probe = "import sys, memlane; print(sorted(m for m in sys.modules if m.startswith('memlane')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['memlane']"


def test_the_first_example_runs_as_written(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert example is not None
    project = make_project(tmp_path)
    program = example.group(1).replace('"/path/to/project"', repr(str(project)))
    program += "\nprint(section.heading, len(result.hits))\n"
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(" 1")
    assert done.stderr == ""
