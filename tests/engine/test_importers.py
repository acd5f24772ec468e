"""memlane import pi-memory / claude-code (engine/topics/importers/) on a real store, lexical only."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from helpers import TOPIC_DAY, Cli, FixedClock, open_memory
from memlane.core.errors import NotFoundError
from memlane.engine.topics import importers as I
from memlane.store import topics as T
from memlane.transcripts.locate import claude_project_dir_name

TODAY = date(2026, 11, 30)
# When these imports run (the memory's clock): TODAY, mid-morning UTC.
IMPORT_AT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)

PI_DEBUGGING = """\
---
name: Debugging Tips
description: Common debugging patterns, SSH ports, MySQL timeout configs
type: feedback
updated: 2026-07-13
---

## SSH Gotcha
staging uses port 2222, key at ~/.ssh/staging

## MySQL Timeout
connection timeout after 30s on staging
"""

PI_API = """\
---
name: API Conventions
description: REST handlers in src/api/handlers/; standard error format
type: project
updated: 2026-07-10
---

## REST handlers
REST handlers live in src/api/handlers/, one file per resource.

## Error format
Errors are returned as {"code": ..., "message": ...} with the HTTP status.
"""

PI_PREFERENCES = """\
---
name: Preferences
description: How the user likes to work
type: user
updated: 2026-06-01
---

## Package manager
Use pnpm, never npm: the lockfile is pnpm-lock.yaml.
"""

PI_INDEX = """\
# Memory Index

- [Debugging Tips](debugging.md) — SSH Gotcha; MySQL Timeout
- [API Conventions](api.md) — REST handlers; Error format
- [Preferences](preferences.md) — Package manager
"""

CC_TESTING = """\
---
name: Testing approach
description: integration tests must hit a real database, not mocks
type: feedback
---

Integration tests must hit a real database, not mocks.

**Why:** a mocked migration passed CI last quarter and broke production.
**How to apply:** use the docker-compose Postgres in tests/integration.
"""

CC_ROLE = """\
---
name: User role
description: the user is a data scientist focused on observability
type: user
---

The user is a data scientist focused on observability; explain frontend code in
terms of the data it shows.
"""

CC_FREEZE = """\
---
name: Release freeze
description: merge freeze dates and owner for the mobile release
type: project
---

## Freeze
Merge freeze starts 2026-03-05 for the mobile release.

## Owner
Dana owns the release branch.
"""

CC_LEGACY = "CORS errors in local dev are always the Vite proxy, never the backend.\n"

CC_INDEX = """\
# Memory

- [Testing approach](feedback_testing.md) — integration tests hit a real database
- [User role](user_role.md) — data scientist, observability
- [Release freeze](project_freeze.md) — freeze 2026-03-05
- [Legacy](legacy.md) — CORS and the Vite proxy

## Build commands
- `npm run build:staging` auto-loads staging env vars; no .env.staging needed
"""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$HOME``: the importers' default directories (``~/.pi/memory``,
    ``~/.claude/projects``) are found below it, with no agent directory override."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("PI_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


def add_local_ssh_gotcha(store: Path) -> None:
    """A topic entry of the store's own, titled like one the pi-memory tree brings."""
    T.add(
        store,
        content="staging SSH is on port 22 now",
        topic="debugging",
        title="SSH Gotcha",
        today=TOPIC_DAY,
    )


def write_tree(directory: Path, files: dict[str, str | bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return directory


def pi_tree(directory: Path, **extra: str | bytes) -> Path:
    files: dict[str, str | bytes] = {
        "MEMORY.md": PI_INDEX,
        "debugging.md": PI_DEBUGGING,
        "api.md": PI_API,
        "preferences.md": PI_PREFERENCES,
        ".dream-meta.json": json.dumps({"lastDream": "2026-11-01T10:00:00Z", "sessions": 3}),
    }
    files.update(extra)
    return write_tree(directory, files)


def claude_tree(directory: Path) -> Path:
    return write_tree(
        directory,
        {
            "MEMORY.md": CC_INDEX,
            "feedback_testing.md": CC_TESTING,
            "user_role.md": CC_ROLE,
            "project_freeze.md": CC_FREEZE,
            "legacy.md": CC_LEGACY,
        },
    )


def snapshot(store: Path) -> dict[str, str]:
    return {
        str(p.relative_to(store)): p.read_text(encoding="utf-8")
        for p in sorted(store.rglob("*.md"))
        if p.is_file()
    }


def entries(store: Path, slug: str) -> dict[str, str]:
    return {e.title: e.body for e in T.read_topic(store, slug).entries}


# --- pi-memory ------------------------------------------------------------------------------


def test_pi_memory_imports_every_topic_and_entry_with_its_frontmatter(
    project: Path, tmp_path: Path
) -> None:
    source = pi_tree(tmp_path / "pi")
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_pi_memory(mem, source)
        store = mem.scope.store
    assert len(report.of("imported")) == 5
    assert not report.of("salvaged") and not report.of("renamed")
    assert sorted(report.topics_created) == ["api", "debugging", "preferences"]
    infos = {info.slug: info for info in T.list_topics(store)}
    assert infos["debugging"].name == "Debugging Tips"
    assert infos["debugging"].type == "feedback"
    assert infos["debugging"].updated == "2026-07-13"
    assert infos["debugging"].description == (
        "Common debugging patterns, SSH ports, MySQL timeout configs"
    )
    assert infos["api"].type == "project" and infos["api"].name == "API Conventions"
    assert infos["preferences"].type == "user"
    assert entries(store, "debugging") == {
        "SSH Gotcha": "staging uses port 2222, key at ~/.ssh/staging",
        "MySQL Timeout": "connection timeout after 30s on staging",
    }
    assert entries(store, "api")["Error format"].startswith('Errors are returned as {"code"')
    # The index is rebuilt from the imported topics, not copied.
    index = (store / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [Debugging Tips](topics/debugging.md) — SSH Gotcha; MySQL Timeout" in index
    assert any(".dream-meta.json" in ignored for ignored in report.ignored)


def test_pi_memory_rerun_adds_nothing(project: Path, tmp_path: Path) -> None:
    source = pi_tree(tmp_path / "pi", **{"notes.txt": "rotate the staging certs every 90 days\n"})
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        first = I.import_pi_memory(mem, source)
        before = snapshot(mem.scope.store)
        mem.clock.set(datetime(2026, 12, 24, 10, 0, tzinfo=UTC))
        second = I.import_pi_memory(mem, source)
        assert snapshot(mem.scope.store) == before
    assert first.written == 6
    assert second.written == 0 and len(second.of("skipped")) == 6
    assert second.topics_created == []


def test_same_title_other_content_is_suffixed_never_overwritten(
    project: Path, tmp_path: Path
) -> None:
    source = pi_tree(tmp_path / "pi")
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        store = mem.scope.store
        add_local_ssh_gotcha(store)
        report = I.import_pi_memory(mem, source)
        renamed = report.of("renamed")
        assert [(r.original_title, r.title) for r in renamed] == [
            ("SSH Gotcha", "SSH Gotcha (imported 2026-11-30)")
        ]
        got = entries(store, "debugging")
        assert got["SSH Gotcha"] == "staging SSH is on port 22 now"
        assert got["SSH Gotcha (imported 2026-11-30)"] == (
            "staging uses port 2222, key at ~/.ssh/staging"
        )
        # The existing topic keeps its own frontmatter.
        assert T.read_topic(store, "debugging").get("name") == "Debugging"
        assert "debugging" not in report.topics_created
        # A later re-run (another day) recognises the suffixed copy.
        mem.clock.set(datetime(2027, 1, 2, 10, 0, tzinfo=UTC))
        again = I.import_pi_memory(mem, source)
        assert again.written == 0
        # The source changes once more: a second suffix, still nothing overwritten.
        (source / "debugging.md").write_text(
            PI_DEBUGGING.replace("port 2222", "port 2200"), encoding="utf-8"
        )
        mem.clock.set(IMPORT_AT)
        third = I.import_pi_memory(mem, source)
        assert [r.title for r in third.of("renamed")] == ["SSH Gotcha (imported 2026-11-30 #2)"]
        assert len(entries(store, "debugging")) == 4


def test_unparseable_content_is_salvaged_verbatim_and_reported(
    project: Path, tmp_path: Path
) -> None:
    broken = "---\nname: Broken\ntype: feedback\n\n## Half written\nthe frontmatter never ends\n"
    odd_front = "---\nname: Odd\nthis line is not yaml\n---\n\n## Kept\nthe entry itself is fine\n"
    source = pi_tree(
        tmp_path / "pi",
        **{
            "broken.md": broken,
            "odd.md": odd_front,
            "notes.txt": "rotate the staging certs every 90 days\n",
            "diagram.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
            "latin.md": "## Caf\u00e9\ncaf\u00e9 on the staging box\n".encode("latin-1"),
            "MEMORY.md": PI_INDEX + "- [Deploys](deploys.md) — deploys need the VPN since March\n",
        },
    )
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_pi_memory(mem, source)
        store = mem.scope.store
        salvaged = {item.title: item for item in report.of("salvaged")}
        assert set(salvaged) == {
            "broken.md",
            "odd.md (frontmatter)",
            "notes.txt",
            "latin.md",
            "MEMORY.md",
        }
        assert all(item.topic == "imported-pi-memory" for item in salvaged.values())
        assert "never closed" in (salvaged["broken.md"].reason or "")
        kept = entries(store, "imported-pi-memory")
        assert "the frontmatter never ends" in kept["broken.md"]
        assert kept["broken.md"].startswith("```text\n---\nname: Broken")
        assert "this line is not yaml" in kept["odd.md (frontmatter)"]
        assert "deploys need the VPN since March" in kept["MEMORY.md"]
        assert "Debugging Tips" not in kept["MEMORY.md"]  # pointers to present files are dropped
        # The entries of a file whose frontmatter could not be read still land.
        assert entries(store, "odd") == {"Kept": "the entry itself is fine"}
        assert "diagram.png (binary file)" in report.ignored
        assert "café on the staging box" in kept["latin.md"]
        assert "not UTF-8" in (salvaged["latin.md"].reason or "")
        text = report.render()
        assert "! topics/imported-pi-memory.md: broken.md" in text
        assert "not imported: diagram.png (binary file)" in text
        assert I.import_pi_memory(mem, source).written == 0


def test_frontmatter_variants_are_kept(project: Path, tmp_path: Path) -> None:
    long_title = "A title far too long to be an entry title " * 6
    source = write_tree(
        tmp_path / "cc",
        {
            "reference_linear.md": (
                "---\nname: Bug tracker\ndescription: >\n  bugs live in Linear,\n"
                "  project INGEST\nmetadata:\n  type: reference\noriginSessionId: abc-123\n"
                "---\n\nBugs are tracked in Linear, project INGEST.\n"
            ),
            "odd_type.md": "---\nname: Odd type\ntype: note\n---\n\nA note of an unknown type.\n",
            "long.md": f"## {long_title}\nthe body of an entry with a long title\n",
        },
    )
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_pi_memory(mem, source)
        store = mem.scope.store
        linear = T.read_topic(store, "reference-linear")
        assert linear.get("type") == "reference"
        assert linear.get("description") == "bugs live in Linear, project INGEST"
        assert linear.get("originSessionId") == "abc-123"
        odd = T.read_topic(store, "odd-type")
        assert odd.get("type") == "feedback" and odd.get("imported_type") == "note"
        salvaged = report.of("salvaged")
        assert len(salvaged) == 1 and "too long" in (salvaged[0].reason or "")
        kept = entries(store, "imported-pi-memory")
        assert any(long_title.strip() in body for body in kept.values())
        assert I.import_pi_memory(mem, source).written == 0


def test_secrets_are_redacted_on_the_way_in(project: Path, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    source = pi_tree(
        tmp_path / "pi",
        **{"ci.md": f"---\nname: CI\ntype: reference\n---\n\n## CI token\nGITHUB_TOKEN={token}\n"},
    )
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_pi_memory(mem, source)
        text = (mem.scope.store / "topics" / "ci.md").read_text(encoding="utf-8")
        assert token not in text and "[REDACTED:" in text
        assert report.redactions >= 1
        assert I.import_pi_memory(mem, source).written == 0


def test_missing_directory_is_a_clear_error(project: Path, home: Path, tmp_path: Path) -> None:
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        with pytest.raises(NotFoundError) as explicit:
            I.import_pi_memory(mem, tmp_path / "nowhere")
        assert str(tmp_path / "nowhere") in explicit.value.message
        with pytest.raises(NotFoundError) as default:
            I.import_pi_memory(mem)
        digest = hashlib.sha256(str(project).encode()).hexdigest()[:12]
        assert str(home / ".pi" / "memory" / digest) in default.value.message
        assert "sha256" in (default.value.hint or "") and str(project) in (default.value.hint or "")
        with pytest.raises(NotFoundError) as claude:
            I.import_claude_code(mem)
        assert "no Claude Code auto-memory directory" in claude.value.message
        assert str(home / ".claude" / "projects") in claude.value.message


def test_dry_run_writes_nothing(project: Path, tmp_path: Path) -> None:
    source = pi_tree(tmp_path / "pi", **{"notes.txt": "a loose note\n"})
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        store = mem.scope.store
        add_local_ssh_gotcha(store)
        before = snapshot(store)
        report = I.import_pi_memory(mem, source, dry_run=True)
        assert snapshot(store) == before
        assert report.dry_run and "Dry run: nothing was written." in report.render()
        assert len(report.of("imported")) == 4
        assert [r.title for r in report.of("renamed")] == ["SSH Gotcha (imported 2026-11-30)"]
        assert [r.title for r in report.of("salvaged")] == ["notes.txt"]
        assert sorted(report.topics_created) == ["api", "imported-pi-memory", "preferences"]
        real = I.import_pi_memory(mem, source)
        assert [i.to_json() for i in real.items] == [i.to_json() for i in report.items]


def test_pi_memory_default_directory_is_the_hash_of_the_git_root(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = hashlib.sha256(str(project).encode("utf-8")).hexdigest()[:12]
    pi_tree(home / ".pi" / "memory" / digest)
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_pi_memory(mem)
        assert report.directory == str(home / ".pi" / "memory" / digest)
        assert report.derivation and digest in report.derivation
        assert len(report.of("imported")) == 5
        # memoryDir in the agent directory's memory.json moves the root.
        agent = tmp_path / "agent"
        agent.mkdir()
        (agent / "memory.json").write_text(json.dumps({"memoryDir": str(tmp_path / "elsewhere")}))
        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
        path, how = I.default_pi_memory_dir(mem)
        assert path == tmp_path / "elsewhere" / digest
        assert "memory.json" in how


# --- Claude Code ----------------------------------------------------------------------------


def test_claude_code_imports_files_free_form_index_and_unstructured_memories(
    project: Path, home: Path
) -> None:
    encoded = claude_project_dir_name(str(project))
    assert "/" not in encoded and encoded.startswith("-")
    claude_tree(home / ".claude" / "projects" / encoded / "memory")
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_claude_code(mem)
        store = mem.scope.store
    assert not report.of("salvaged") and not report.of("renamed")
    infos = {info.slug: info for info in T.list_topics(store)}
    assert set(infos) == {
        "feedback-testing",
        "user-role",
        "project-freeze",
        "legacy",
        "claude-code-index-notes",
    }
    testing = infos["feedback-testing"]
    assert (testing.name, testing.type) == ("Testing approach", "feedback")
    assert testing.description == "integration tests must hit a real database, not mocks"
    # A memory without "## " blocks becomes one entry titled after its name.
    assert testing.titles == ["Testing approach"]
    body = entries(store, "feedback-testing")["Testing approach"]
    assert "**How to apply:** use the docker-compose Postgres" in body
    assert infos["user-role"].type == "user"
    assert infos["project-freeze"].titles == ["Freeze", "Owner"]
    assert infos["project-freeze"].type == "project"
    # No frontmatter at all: named after the file, default type.
    assert infos["legacy"].titles == ["Legacy"] and infos["legacy"].type == "feedback"
    # Free-form MEMORY.md notes survive; pointer lines do not become entries.
    notes = entries(store, "claude-code-index-notes")
    assert list(notes) == ["Build commands"]
    assert "npm run build:staging" in notes["Build commands"]


def test_claude_code_rerun_adds_nothing(project: Path, home: Path) -> None:
    encoded = claude_project_dir_name(str(project))
    claude_tree(home / ".claude" / "projects" / encoded / "memory")
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        I.import_claude_code(mem)
        before = snapshot(mem.scope.store)
        again = I.import_claude_code(mem)
        assert snapshot(mem.scope.store) == before
    assert again.written == 0 and len(again.of("skipped")) == 6


def test_claude_code_default_directory_honours_claude_config_dir_and_worktrees(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    memory = config / "projects" / claude_project_dir_name(str(project)) / "memory"
    claude_tree(memory)
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        path, how = I.default_claude_code_dir(mem)
        assert path == memory
        assert str(config / "projects") in how
    # A linked worktree shares the main checkout's memory.
    worktree = (tmp_path / "wt").resolve()
    git_dir = project / ".git" / "worktrees" / "wt"
    git_dir.mkdir(parents=True)
    (git_dir / "commondir").write_text("../..\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {git_dir}\n")
    with open_memory(worktree, clock=FixedClock(IMPORT_AT)) as mem:
        report = I.import_claude_code(mem)
        assert report.directory == str(memory)
        # --project names another project; a memory directory itself is taken as is.
        assert I.import_claude_code(mem, memory, dry_run=True).directory == str(memory)
        assert I.import_claude_code(mem, project, dry_run=True).directory == str(memory)


def test_imported_entries_are_searchable(project: Path, tmp_path: Path, home: Path) -> None:
    pi = pi_tree(tmp_path / "pi")
    claude_tree(home / ".claude" / "projects" / claude_project_dir_name(str(project)) / "memory")
    with open_memory(project, clock=FixedClock(IMPORT_AT)) as mem:
        I.import_pi_memory(mem, pi)
        I.import_claude_code(mem)
        hits = mem.search("staging port 2222", 5, kind="topic", sync=False).hits
        assert hits and hits[0].source.endswith(os.path.join("topics", "debugging.md"))
        assert "port 2222" in hits[0].content
        hits = mem.search("Vite proxy CORS", 5, kind="topic", sync=False).hits
        assert hits and hits[0].source.endswith(os.path.join("topics", "legacy.md"))


def test_cli_prints_what_was_imported(project: Path, tmp_path: Path, cli: Cli) -> None:
    source = pi_tree(tmp_path / "pi")
    lexical = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    dry = cli("import", "pi-memory", str(source), "--dry-run", "--json", env=lexical)
    assert dry.returncode == 0, dry.stderr
    data = json.loads(dry.stdout)
    assert data["dry_run"] is True and data["counts"]["imported"] == 5
    assert not (project / ".memsearch" / "memory" / "topics").exists()
    done = cli("import", "pi-memory", str(source), env=lexical)
    assert done.returncode == 0, done.stderr
    assert "5 imported, 0 renamed, 0 salvaged, 0 skipped" in done.stdout
    assert "+ topics/debugging.md: SSH Gotcha" in done.stdout
    assert (project / ".memsearch" / "memory" / "topics" / "debugging.md").is_file()
    again = cli("import", "pi-memory", str(source), env=lexical)
    assert "0 imported" in again.stdout and "5 skipped" in again.stdout
    missing = cli("import", "claude-code", "--project", str(tmp_path / "none"), env=lexical)
    assert missing.returncode != 0
    assert "no Claude Code auto-memory directory" in missing.stderr
