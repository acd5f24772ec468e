"""docs/python-api.md and the library surface say the same thing.

Every public member of ``Memory`` and ``Session`` (methods, properties and
the attributes an instance carries), of what their ``internals`` hold for
memlane's own hosts, of every result type, every error and every name
``memlane`` exports is in docs/python-api.md, each in its own table; every
member the page's tables document exists; the page's first example runs as
written, against a project of its own.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import memlane
from helpers import make_project, open_memory, start_session
from memlane import Memory

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def _section(heading: str, *, subsections: bool = True) -> str:
    """The page's text from *heading* to the next heading of the same level or
    above (without *subsections*: to the next heading of any level)."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(heading)
    level = len(heading.split(" ")[0])
    deepest = level if subsections else 6
    found = re.compile(rf"\n#{{1,{deepest}}} ").search(text, start + len(heading))
    return text[start : found.start() if found else len(text)]


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


def _rows(section: str) -> dict[str, list[str]]:
    """Each table row of *section* by the first name its first cell gives: its cells."""
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        first = re.match(r"`([A-Za-z_]\w*)", cells[0]) if cells else None
        if first is not None:
            rows[first.group(1)] = cells
    return rows


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return open_memory(make_project(tmp_path))


def test_every_public_member_of_memory_is_documented_and_every_documented_one_exists(
    memory: Memory,
) -> None:
    documented = _documented(_section("## `Memory`", subsections=False), "Memory")
    assert sorted(_public(memory) - documented) == []
    assert sorted(documented - _public(memory)) == []


def test_what_memory_internals_holds_is_documented_as_not_api(memory: Memory) -> None:
    documented = _documented(_section("### `Memory.internals`"), "Memory.internals")
    assert sorted(_public(memory.internals) - documented) == []
    assert sorted(documented - _public(memory.internals)) == []


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
        documented = _documented(_section("## `Session`", subsections=False), "Session")
        assert sorted(_public(session) - documented) == []
        assert sorted(documented - _public(session)) == []
        internals = _documented(_section("### `Session.internals`"), "Session.internals")
        assert sorted(_public(session.internals) - internals) == []
        assert sorted(internals - _public(session.internals)) == []
    finally:
        session.shutdown()


def test_every_exported_name_is_documented_and_importable() -> None:
    documented = _documented(_section("## What `memlane` exports"), "memlane")
    assert sorted(set(memlane.__all__) - documented) == []
    assert sorted(documented - set(memlane.__all__)) == []
    for name in memlane.__all__:
        assert getattr(memlane, name) is not None


def test_every_literal_type_is_documented_with_its_values() -> None:
    rows = _rows(_section("## The `Literal` types"))
    literals = {name for name in memlane.__all__ if typing.get_origin(getattr(memlane, name))}
    assert sorted(literals) == sorted(rows)
    for name in literals:
        values = re.findall(r'`"([^"]*)"`', rows[name][1])
        assert values == list(typing.get_args(getattr(memlane, name))), name


def test_every_field_and_member_of_each_result_type_is_documented() -> None:
    rows = _rows(_section("## Result types"))
    results = {name for name in memlane.__all__ if dataclasses.is_dataclass(getattr(memlane, name))}
    assert sorted(results) == sorted(rows)
    for name in results:
        cls = getattr(memlane, name)
        fields = {field.name for field in dataclasses.fields(cls)}
        members = fields | {member for member in dir(cls) if not member.startswith("_")}
        documented = set(re.findall(r"`([A-Za-z_]\w*)", rows[name][1]))
        assert sorted(members - documented) == [], name
        assert sorted(documented - members) == [], name


def test_every_error_is_documented_with_its_base_and_what_it_carries() -> None:
    section = _section("## Errors")
    rows = _rows(section)
    errors = {
        name
        for name in memlane.__all__
        if isinstance(getattr(memlane, name), type)
        and issubclass(getattr(memlane, name), memlane.MemlaneError)
    }
    assert sorted(errors) == sorted(rows)
    for name in errors:
        base = getattr(memlane, name).__bases__[0].__name__
        assert rows[name][1] == f"`{base}`", name
    error = memlane.MemlaneError("what was wrong", "what to do")
    carried = _public(error) - _public(Exception())
    assert sorted(carried) == ["exit_code", "hint", "message"]
    for name in carried:
        assert f"`{name}`" in section.split("\n|")[0], name


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
