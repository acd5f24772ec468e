"""``memlane mcp``'s results as a client that reads only ``structuredContent`` sees them.

Claude Code hands the model the JSON of ``structuredContent`` in place of the
text whenever a result has it, so the structured form must say what the text
says: the same hits, scores and chunk hashes, and the text's sentences
(headline, what scores mean, what to call next) as fields. Every result,
errors included, validates against the tool's ``outputSchema``; the input
schemas say forget's one-of rule and memory_topic's per-action arguments in
keywords Claude Code passes on to the model (never a root oneOf/anyOf/allOf).
A session search finds past transcripts with no backfill run: the server
catches the sessions layer up in the background (what README.md and
docs/sessions.md say of MCP).

Driven over stdio by the official SDK's client against the real
``memlane mcp`` process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent, Tool

from _transcript_builders import ClaudeSession
from helpers import FixedClock, isolate_environment, make_project, open_memory
from memlane.core.types import Anchor
from memlane.engine.shared.tool_catalog import SPECS
from memlane.transcripts.locate import claude_project_dir_name

TEST_TIMEOUT_S = 90

pytestmark = pytest.mark.subprocess


def _text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


class Client:
    """One stdio session; every result is checked against its tool's outputSchema."""

    def __init__(self, session: ClientSession, tools: list[Tool]) -> None:
        self.session = session
        self.tools = {tool.name: tool for tool in tools}

    async def call(self, name: str, *, error: bool = False, **arguments: Any) -> CallToolResult:
        result = await self.session.call_tool(name, arguments)
        assert isinstance(result, CallToolResult)
        assert bool(result.is_error) is error, _text(result)
        schema = self.tools[name].output_schema
        assert schema is not None
        structured = result.structured_content
        assert isinstance(structured, dict)
        # The SDK's client checks successes itself; errors are checked here too.
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(structured)]
        assert errors == [], (name, structured)
        return result


def _params(project: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane.cli.fast", "mcp", "-C", str(project)],
        env={**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"},
    )


def _serve(project: Path, tmp_path: Path, body: Any) -> None:
    errors = tmp_path / "server-stderr.log"

    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S), errors.open("w") as errlog:
            async with (
                stdio_client(_params(project), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = (await session.list_tools()).tools
                await body(Client(session, listed))

    anyio.run(bounded)
    assert "Traceback" not in errors.read_text()


def _anchored_transcript(project: Path, tmp_path: Path, clock: FixedClock) -> tuple[Path, str]:
    """A Claude Code transcript and a memory anchored to its answer."""
    cc = ClaudeSession()
    cc.user("Which database for the ledger?")
    answer = cc.assistant([{"type": "text", "text": "Postgres: it has the row locks we need."}])
    transcript = cc.write(tmp_path / f"{cc.session_id}.jsonl")
    memory = open_memory(project, clock=clock)
    try:
        anchor = Anchor(session=cc.session_id, turn=answer, transcript=str(transcript))
        memory.write("We chose Postgres over MySQL for the ledger.", anchor)
    finally:
        memory.close()
    return transcript, answer


def test_structured_content_says_what_the_text_says_and_validates(
    project: Path, tmp_path: Path, clock: FixedClock
) -> None:
    transcript, answer = _anchored_transcript(project, tmp_path, clock)

    async def body(client: Client) -> None:
        found = await client.call("memory_search", query="ledger database Postgres")
        text, facts = _text(found), found.structured_content
        assert facts is not None and facts["hits"]
        # The text's sentences, word for word, as fields.
        assert text.startswith(facts["headline"])
        assert facts["score_meaning"] in text and facts["next"] in text
        assert "memory_expand" in facts["next"]
        for hit in facts["hits"]:
            assert hit["chunk_hash"] in text
            assert f"{hit['score']:.3f}" in text
        assert facts["query"] == "ledger database Postgres"

        expanded = await client.call("memory_expand", chunk_hash=facts["hits"][0]["chunk_hash"])
        section = expanded.structured_content
        assert section is not None and section["anchor"]["turn"] == answer
        # L2 says how to reach L3, in both forms.
        assert section["next"] in _text(expanded)
        assert "memory_transcript" in section["next"] and str(transcript) in section["next"]

        read = await client.call(
            "memory_transcript", transcript_path=section["anchor"]["transcript"], turn=answer
        )
        turns = read.structured_content
        assert turns is not None and _text(read).startswith(turns["headline"])
        assert any("row locks" in turn["text"] for turn in turns["turns"])
        assert "row locks" in _text(read)

        nothing = await client.call("memory_search", query="zebra unicorn", min_score=0.99)
        empty = nothing.structured_content
        assert empty is not None and empty["hits"] == [] and empty["nothing_relevant"] is True
        assert _text(nothing).startswith(empty["headline"])

        wrote = await client.call("memory_write", text="Staging listens on port 2222.")
        entry = wrote.structured_content
        assert entry is not None and _text(wrote).startswith(entry["headline"])

        similar = await client.call("memory_similar", chunk_hash=facts["hits"][0]["chunk_hash"])
        assert similar.structured_content is not None
        assert _text(similar).startswith(similar.structured_content["headline"])

        added = await client.call(
            "memory_topic",
            action="add",
            topic="db",
            title="The ledger runs on Postgres",
            content="The ledger uses Postgres for its row locks.",
        )
        assert added.structured_content is not None
        assert _text(added).startswith(added.structured_content["headline"])
        for arguments in (
            {"action": "list"},
            {"action": "search", "query": "ledger"},
            {"action": "remove", "entry": "The ledger runs on Postgres"},
        ):
            topic = await client.call("memory_topic", **arguments)
            assert topic.structured_content is not None
            assert _text(topic).startswith(topic.structured_content["headline"])

        status = await client.call("memory_status")
        assert status.structured_content is not None
        assert isinstance(status.structured_content["missing"], list)

        forgot = await client.call("memory_forget", chunk_hash=facts["hits"][0]["chunk_hash"])
        removed = forgot.structured_content
        assert removed is not None and _text(forgot).startswith(removed["headline"])
        assert "Postgres over MySQL" in removed["markdown"]

    _serve(project, tmp_path, body)


def test_every_error_is_a_result_that_validates_with_its_hint(
    project: Path, tmp_path: Path
) -> None:
    async def body(client: Client) -> None:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("memory_write", {}),
            ("memory_search", {"query": "x", "k": "five"}),
            ("memory_expand", {"chunk_hash": "nope"}),
            ("memory_transcript", {"transcript_path": "none"}),
            ("memory_similar", {"chunk_hash": "0123456789abcdef"}),
            ("memory_forget", {}),
            ("memory_forget", {"chunk_hash": "abcd1234", "date": "2026-01-01"}),
            ("memory_compact", {"source": "/nowhere.md"}),
            ("memory_status", {"verbose": True}),
            ("memory_topic", {"action": "add", "title": "x"}),
            ("memory_topic", {"action": "remove", "query": "x", "entry": "y"}),
        ]
        for name, arguments in calls:
            failed = await client.call(name, error=True, **arguments)
            facts = failed.structured_content
            assert facts is not None and set(facts) == {"error", "hint"}
            text = _text(failed)
            assert text.startswith(facts["error"]), name
            if facts["hint"]:
                assert text.endswith(f"Hint: {facts['hint']}"), name
        needs = await client.call("memory_topic", error=True, action="add", title="x")
        assert needs.structured_content == {
            "error": "memory_topic add needs content, topic",
            "hint": "add needs content, topic, title and may take type",
        }

        both = await client.call("memory_forget", error=True, chunk_hash="abcd1234", time="10:00")
        assert both.structured_content == {
            "error": "memory_forget takes a chunk_hash or a date and time, not both",
            "hint": "pass the chunk_hash alone, or date and time without it",
        }

    _serve(project, tmp_path, body)


def test_the_server_indexes_past_sessions_without_a_backfill(project: Path, tmp_path: Path) -> None:
    """No session events over MCP, but the server runs the background catch-up
    (engine/live/background.py): a transcript written before it started is
    found by a session search, with no ``memlane sessions backfill``."""
    cc = ClaudeSession()
    cc.user("Which queue for the ledger events?")
    cc.assistant([{"type": "text", "text": "Kafka, partitioned by account."}])
    claude_dir = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    where = claude_dir / claude_project_dir_name(str(project))
    where.mkdir(parents=True)
    cc.write(where / f"{cc.session_id}.jsonl")

    async def body(client: Client) -> None:
        with anyio.fail_after(30):
            while True:
                found = await client.call(
                    "memory_search", query="Kafka partitioned", kind="session", mode="lexical"
                )
                facts = found.structured_content
                assert facts is not None
                if facts["hits"]:
                    break
                await anyio.sleep(0.1)
        assert facts["hits"][0]["session"] == cc.session_id

    _serve(project, tmp_path, body)


# -- the schemas, as listed --------------------------------------------------------------


def _listed(project: Path, tmp_path: Path) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}

    async def body(client: Client) -> None:
        tools.update(client.tools)

    _serve(project, tmp_path, body)
    return tools


@pytest.fixture(scope="module")
def listed(
    tmp_path_factory: pytest.TempPathFactory, shared_cache: Path
) -> Iterator[dict[str, Tool]]:
    """One ``memlane mcp`` lists the tools for every schema test here (listing
    changes nothing). Module-scoped, it runs before the per-test isolation, so
    it isolates its own environment."""
    root = tmp_path_factory.mktemp("mcp-listed")
    home = root / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_environment(monkeypatch, home, shared_cache)
        yield _listed(make_project(root), root)


def _valid(schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    return Draft202012Validator(schema).is_valid(arguments)


def test_every_tool_has_an_object_output_schema_and_keeps_its_annotations(
    listed: dict[str, Tool],
) -> None:
    assert list(listed) == [spec.name for spec in SPECS]
    for tool in listed.values():
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object"
        Draft202012Validator.check_schema(schema)
        Draft202012Validator.check_schema(tool.input_schema)
        # Claude Code rewrites an input schema with a root oneOf/anyOf/allOf to a
        # bare object (required and all): the rules must live elsewhere.
        assert not {"oneOf", "anyOf", "allOf"} & set(tool.input_schema), tool.name
        annotations = tool.annotations
        assert annotations is not None and annotations.open_world_hint is False
        assert tool.title and annotations.title == tool.title


def test_forget_schema_takes_a_chunk_hash_or_a_date_and_time(listed: dict[str, Tool]) -> None:
    schema = listed["memory_forget"].input_schema
    assert _valid(schema, {"chunk_hash": "abcd1234"})
    assert _valid(schema, {"date": "2026-08-13", "time": "14:02"})
    assert _valid(schema, {"date": "2026-08-13", "time": "14:02#2"})
    for wrong in (
        {},
        {"date": "2026-08-13"},
        {"time": "14:02"},
        {"chunk_hash": "abcd1234", "date": "2026-08-13"},
        {"chunk_hash": "abcd1234", "date": "2026-08-13", "time": "14:02"},
    ):
        assert not _valid(schema, wrong), wrong
    # The descriptions say the rule to a model that does not read keywords.
    description = listed["memory_forget"].description or ""
    assert "exactly one of" in description
    properties = schema["properties"]
    assert "alone" in properties["chunk_hash"]["description"]
    for name in ("date", "time"):
        assert "never with chunk_hash" in properties[name]["description"]


def test_topic_schema_says_what_each_action_needs(listed: dict[str, Tool]) -> None:
    schema = listed["memory_topic"].input_schema
    assert schema["required"] == ["action"]
    full_add = {"action": "add", "content": "c", "topic": "t", "title": "T"}
    assert _valid(schema, full_add)
    assert _valid(schema, {**full_add, "type": "project"})
    assert _valid(schema, {"action": "remove", "entry": "T"})
    assert _valid(schema, {"action": "list"})
    assert _valid(schema, {"action": "search", "query": "q"})
    assert _valid(schema, {"action": "search", "query": "q", "scope": "sessions"})
    for wrong in (
        {"action": "add", "content": "c", "topic": "t"},
        {"action": "remove"},
        {"action": "remove", "entry": "T", "query": "q"},
        {"action": "list", "query": "q"},
        {"action": "search"},
        {"action": "search", "query": "q", "entry": "T"},
        {"action": "fly"},
    ):
        assert not _valid(schema, wrong), wrong
