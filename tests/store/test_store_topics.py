"""Topic files and MEMORY.md (store/topics/): formats, rules, limits, safety."""

from __future__ import annotations

import multiprocessing
import os
import re
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import TOPIC_DAY
from memlane.core.errors import MemlaneError, NotFoundError, StoreError
from memlane.store import topics as T

DAY = date(2026, 7, 13)

GOLDEN = """\
---
name: Debugging Tips
description: staging uses port 2222, key at ~/.ssh/staging
type: feedback
updated: 2026-07-13
---

## SSH Gotcha
staging uses port 2222, key at ~/.ssh/staging

## MySQL Timeout
connection timeout after 30s on staging
"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "proj" / ".memsearch" / "memory"


def add(store: Path, title: str, content: str = "some fact", topic: str = "Debugging Tips", **kw):  # type: ignore[no-untyped-def]
    return T.add(store, content=content, topic=topic, title=title, today=DAY, **kw)


# --- golden formats ---------------------------------------------------------------------------


def test_written_file_is_the_golden_format_and_round_trips(store: Path) -> None:
    add(store, "SSH Gotcha", "staging uses port 2222, key at ~/.ssh/staging")
    add(
        store, "MySQL Timeout", "connection timeout after 30s on staging", topic="debugging-tips.md"
    )
    text = (store / "topics" / "debugging-tips.md").read_text(encoding="utf-8")
    assert text == GOLDEN
    assert T.TopicFile.parse(text).render() == text
    index = (store / "MEMORY.md").read_text(encoding="utf-8")
    assert index == "- [Debugging Tips](topics/debugging-tips.md) — SSH Gotcha; MySQL Timeout\n"


@pytest.mark.parametrize(
    "text",
    [
        GOLDEN,
        GOLDEN.replace("type: feedback\n", "type: feedback\nowner: 'ops team'\nx-custom: 1\n"),
        GOLDEN.replace("\n\n## MySQL", "\n\n\n\n## MySQL") + "\n\n",
        "no frontmatter at all\n\n## Only\nbody",
        "---\nname: unterminated\n## Heading\nbody\n",
        "",
        "---\r\nname: crlf\r\n---\r\n\r\n## A\r\nb\r\n",
    ],
)
def test_hand_edited_files_render_back_byte_identical(text: str) -> None:
    assert T.TopicFile.parse(text).render() == text


def test_adding_to_a_hand_edited_file_keeps_unknown_keys_and_spacing(store: Path) -> None:
    path = store / "topics" / "ops.md"
    path.parent.mkdir(parents=True)
    hand = (
        '---\nname: Ops\nowner: "ops team"\ntype: project\nupdated: 2026-01-01\n---\n'
        "intro line kept\n\n\n## First\nfirst body\n\n\n"
    )
    path.write_text(hand, encoding="utf-8")
    change = add(store, "Second", "second body", topic="ops")
    text = path.read_text(encoding="utf-8")
    assert text.startswith(
        '---\nname: Ops\nowner: "ops team"\ntype: project\nupdated: 2026-07-13\n'
    )
    assert "description: second body\n---\nintro line kept\n\n\n## First\nfirst body\n\n\n" in text
    assert text.endswith("## Second\nsecond body\n")
    assert change.type == "project" and not change.created_file


@pytest.mark.parametrize(
    "value",
    ["plain words", "a: colon", "#hash", "- dash", "true", "123", " padded", 'quote"d', "ünï"],
)
def test_frontmatter_values_round_trip_through_quoting(value: str) -> None:
    parsed = T.TopicFile()
    parsed.set("description", value)
    assert T.TopicFile.parse(parsed.render()).get("description") == value


def test_frontmatter_single_quotes_and_missing_fields() -> None:
    parsed = T.TopicFile.parse("---\nname: 'it''s'\n---\n## A\nb\n")
    assert parsed.get("name") == "it's"
    assert parsed.get("type") is None


# --- add ----------------------------------------------------------------------------------------


def test_new_topic_frontmatter_defaults_and_explicit_type(store: Path) -> None:
    change = add(
        store, "Uses Postgres 16", "the app runs Postgres 16", topic="stack.md", type="project"
    )
    parsed = T.read_topic(store, "stack.md")
    assert parsed.get("name") == "Stack"
    assert parsed.get("description") == "the app runs Postgres 16"
    assert parsed.get("type") == "project"
    assert parsed.get("updated") == "2026-07-13"
    assert change.created_file and change.action == "added"
    default = add(store, "Prefers tabs", topic="Preferences")
    assert default.type == "feedback"


def test_same_title_twice_in_a_topic_is_refused(store: Path) -> None:
    add(store, "SSH Gotcha")
    with pytest.raises(MemlaneError, match="already has an entry titled") as err:
        add(store, "SSH Gotcha", "other text")
    assert "remove it first" in str(err.value.hint) and "different title" in str(err.value.hint)
    add(store, "SSH Gotcha", topic="other")  # another topic is fine


@pytest.mark.parametrize("bad", ["", "   ", "\n"])
def test_empty_title_or_content_is_refused(store: Path, bad: str) -> None:
    with pytest.raises(MemlaneError, match="title is empty"):
        add(store, bad)
    with pytest.raises(MemlaneError, match="content is empty"):
        add(store, "T", bad)


def test_unknown_type_is_refused(store: Path) -> None:
    with pytest.raises(MemlaneError, match="unknown memory type"):
        add(store, "T", type="opinion")


def test_headings_in_content_cannot_split_or_forge_entries(store: Path) -> None:
    add(store, "Real", "line one\n## Forged\n# Also\n### kept level 3")
    parsed = T.read_topic(store, "Debugging Tips")
    assert parsed.titles == ["Real"]
    assert "### Forged" in parsed.entries[0].text and "### Also" in parsed.entries[0].text


def test_multiline_title_becomes_one_line(store: Path) -> None:
    change = add(store, "## Two\nlines  here")
    assert change.title == "Two lines here"


def test_secrets_are_redacted_from_content_and_title(store: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    change = add(store, f"token {token}", f"export GITHUB_TOKEN={token}")
    text = (store / "topics" / "debugging-tips.md").read_text(encoding="utf-8")
    index = (store / "MEMORY.md").read_text(encoding="utf-8")
    assert token not in text and token not in index
    assert "[REDACTED:" in text
    assert change.redactions >= 2


# --- MEMORY.md ------------------------------------------------------------------------------------


def test_index_line_fits_150_chars_and_hooks_every_title(store: Path) -> None:
    for i in range(30):
        add(store, f"A fairly descriptive entry title number {i}")
    line = (store / "MEMORY.md").read_text(encoding="utf-8").splitlines()
    assert len(line) == 1 and len(line[0]) <= T.INDEX_LINE_MAX_CHARS
    assert line[0].startswith("- [Debugging Tips](topics/debugging-tips.md) — A fairly")
    assert line[0].endswith("…")


def test_foreign_index_lines_survive_and_topics_keep_their_line(store: Path) -> None:
    store.mkdir(parents=True)
    (store / "MEMORY.md").write_text("# My index\n- [Old](old.md) — imported\n", encoding="utf-8")
    add(store, "One", topic="a")
    add(store, "Two", topic="b")
    add(store, "Three", topic="a")
    assert (store / "MEMORY.md").read_text(encoding="utf-8").splitlines() == [
        "# My index",
        "- [Old](old.md) — imported",
        "- [A](topics/a.md) — One; Three",
        "- [B](topics/b.md) — Two",
    ]


def test_rebuild_index_from_topic_files(store: Path) -> None:
    add(store, "One", topic="b")
    add(store, "Two", topic="a")
    (store / "MEMORY.md").write_text("garbage\n", encoding="utf-8")
    usage = T.rebuild_index(store)
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == (
        "- [A](topics/a.md) — Two\n- [B](topics/b.md) — One\n"
    )
    assert usage.lines == 2


# --- remove -----------------------------------------------------------------------------------------


def test_remove_exact_title_updates_hook_and_last_entry_deletes_file(store: Path) -> None:
    add(store, "SSH Gotcha")
    add(store, "MySQL Timeout")
    add(store, "Other", topic="misc")
    change = T.remove(store, entry="SSH Gotcha", today=DAY)
    assert change.action == "removed" and not change.deleted_file
    assert change.entry == "## SSH Gotcha\nsome fact\n\n"
    assert T.read_topic(store, "Debugging Tips").titles == ["MySQL Timeout"]
    assert T.read_topic(store, "Debugging Tips").render().endswith("## MySQL Timeout\nsome fact\n")
    last = T.remove(store, entry="MySQL Timeout", today=TOPIC_DAY)
    assert last.deleted_file and last.index_line is None
    assert not (store / "topics" / "debugging-tips.md").exists()
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == "- [Misc](topics/misc.md) — Other\n"


def test_remove_rederives_a_description_taken_from_the_removed_entry(store: Path) -> None:
    add(store, "First", "kiwi grows on vines")
    add(store, "Second", "mango is sweet")
    T.remove(store, entry="First", today=TOPIC_DAY)
    assert T.read_topic(store, "Debugging Tips").get("description") == "mango is sweet"
    parsed = T.read_topic(store, "Debugging Tips")
    parsed.set("description", "hand-written")
    (store / "topics" / "debugging-tips.md").write_text(parsed.render(), encoding="utf-8")
    add(store, "Third", "papaya")
    T.remove(store, entry="Second", today=TOPIC_DAY)
    assert T.read_topic(store, "Debugging Tips").get("description") == "hand-written"


def test_remove_without_a_match_suggests_but_removes_nothing(store: Path) -> None:
    add(store, "MySQL Timeout")
    before = (store / "topics" / "debugging-tips.md").read_bytes()
    with pytest.raises(NotFoundError) as err:
        T.remove(store, entry="MySQL Timout", today=TOPIC_DAY)
    assert "MySQL Timeout" in str(err.value.hint) and "nothing was removed" in str(err.value.hint)
    with pytest.raises(NotFoundError, match="no topic entry"):
        T.remove(store, entry="mysql", today=TOPIC_DAY)  # substring: suggested, never removed
    assert (store / "topics" / "debugging-tips.md").read_bytes() == before


def test_remove_of_an_ambiguous_title_names_the_files(store: Path) -> None:
    add(store, "Same", topic="one")
    add(store, "Same", topic="two")
    with pytest.raises(
        MemlaneError, match=r"2 entries are titled 'Same': in topics/one.md, topics/two.md"
    ):
        T.remove(store, entry="Same", today=TOPIC_DAY)
    assert [i.titles for i in T.list_topics(store)] == [["Same"], ["Same"]]


def test_list_topics_reports_frontmatter_and_titles(store: Path) -> None:
    add(store, "B entry", topic="zeta", type="reference")
    add(store, "A entry", topic="Alpha Things")
    infos = T.list_topics(store)
    assert [(i.slug, i.name, i.type, i.updated, i.titles) for i in infos] == [
        ("alpha-things", "Alpha Things", "feedback", "2026-07-13", ["A entry"]),
        ("zeta", "Zeta", "reference", "2026-07-13", ["B entry"]),
    ]
    assert infos[0].to_json()["file"] == "topics/alpha-things.md"


def test_read_topic_of_a_missing_topic(store: Path) -> None:
    with pytest.raises(NotFoundError, match=r"no topic nothing\.md"):
        T.read_topic(store, "nothing")


# --- capacity -----------------------------------------------------------------------------------------


def test_add_past_the_limits_still_writes_and_says_how_to_fix(store: Path) -> None:
    add(store, "one", topic="a", max_lines=1)
    change = add(store, "two", topic="b", max_lines=1)
    assert "two" in T.read_topic(store, "b").titles
    problem = change.capacity_problem
    assert problem is not None
    assert "2 lines (limit 1)" in problem and "memlane dream" in problem and "remove" in problem
    by_bytes = add(store, "three", topic="c", max_bytes=10)
    assert by_bytes.capacity_problem and "bytes (limit 10)" in by_bytes.capacity_problem
    assert add(store, "four", topic="d").capacity_problem is None


def test_snapshot_copy_is_cut_with_a_marker(store: Path) -> None:
    store.mkdir(parents=True)
    lines = [f"- [T{i}](topics/t{i}.md) — hook {i}" for i in range(10)]
    (store / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert T.index_for_snapshot(store) == "\n".join(lines)
    assert T.index_for_snapshot(store, max_lines=3) == "\n".join(lines[:3]) + "\n[truncated]"
    size = len(lines[0].encode()) + 1 + len(lines[1].encode()) + 1
    assert T.index_for_snapshot(store, max_bytes=size) == "\n".join(lines[:2]) + "\n[truncated]"
    first = T.index_for_snapshot(store, max_bytes=8)
    assert first == lines[0][:7] + "\n[truncated]"
    assert T.index_for_snapshot(store / "nowhere") == ""


# --- names and path safety -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "slug"),
    [
        ("debugging.md", "debugging"),
        ("Debugging Tips", "debugging-tips"),
        ("API  Conventions!.MD", "api-conventions"),
        ("Café crème", "cafe-creme"),
        ("  trimmed  ", "trimmed"),
        ("v1.2 notes", "v1-2-notes"),
    ],
)
def test_slugs(given: str, slug: str) -> None:
    assert T.slugify(given) == slug


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "  ",
        "../etc/passwd",
        "..",
        "a..b",
        "/etc/passwd",
        "sub/topic",
        "sub\\topic",
        "nul\x00byte",
        "MEMORY",
        "memory.md",
        "con",
        "NUL.md",
        "com1",
        "LPT9",
        "项目",
        "!!!",
        "x" * 65,
        "y" * 201,
    ],
)
def test_unsafe_or_reserved_topic_names_are_refused(bad: str) -> None:
    with pytest.raises(MemlaneError):
        T.slugify(bad)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.text(max_size=80) | st.from_regex(r"[./\\a-zA-Z0-9 \x00-]{0,20}", fullmatch=True))
def test_any_topic_name_is_a_slug_inside_topics_or_a_clear_error(tmp_path: Path, name: str) -> None:
    store = tmp_path / "store"
    (store / "topics").mkdir(parents=True, exist_ok=True)
    try:
        slug = T.slugify(name)
    except MemlaneError as exc:
        assert exc.message
        return
    # lowercase ASCII words joined by single hyphens; a slug is its own slug
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", slug), slug
    assert T.slugify(slug) == slug
    path = T.topic_path(store, slug)
    assert path.resolve().parent == (store / "topics").resolve()


def test_symlinked_topics_dir_is_refused(store: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    store.mkdir(parents=True)
    (store / "topics").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StoreError, match="symbolic link"):
        add(store, "T")
    assert list(outside.iterdir()) == []


def test_symlinked_topic_file_pointing_out_is_refused_and_skipped(
    store: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: Secret\n---\n## Key\nvalue\n", encoding="utf-8")
    (store / "topics").mkdir(parents=True)
    (store / "topics" / "leak.md").symlink_to(secret)
    with pytest.raises(StoreError, match="outside the topics directory"):
        add(store, "T", topic="leak")
    with pytest.raises(StoreError):
        T.read_topic(store, "leak")
    assert T.list_topics(store) == []
    with pytest.raises(NotFoundError):
        T.remove(store, entry="Key", today=TOPIC_DAY)
    assert secret.read_text(encoding="utf-8").endswith("value\n")


# --- concurrency ------------------------------------------------------------------------------------


def _adder(store: str, worker: int, count: int) -> None:
    for i in range(count):
        T.add(
            Path(store),
            content=f"fact {worker}-{i}",
            topic=f"t{i % 3}",
            title=f"w{worker} e{i}",
            today=TOPIC_DAY,
        )


@pytest.mark.subprocess
def test_concurrent_adds_from_processes_lose_nothing(store: Path) -> None:
    workers, count = 4, 12
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_adder, args=(str(store), w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    titles = sorted(t for info in T.list_topics(store) for t in info.titles)
    assert titles == sorted(f"w{w} e{i}" for w in range(workers) for i in range(count))
    index = (store / "MEMORY.md").read_text(encoding="utf-8").splitlines()
    assert sorted(index) == sorted(
        T.index_line(i.name, i.slug, i.titles) for i in T.list_topics(store)
    )
    assert len(index) == 3
    assert not [n for n in os.listdir(store / "topics") if n.endswith(".tmp")]
