"""``memlane mcp``: the tools over MCP, driven by the official SDK's client; and
``install mcp --print``.

The server is the real process (``python -m memlane.cli.fast mcp``, what the
``memlane`` script runs) on stdio, the SDK's client its peer: once with the
warm engine behind it (what every client gets: the engine is started at
``initialize`` and answers the calls), once with ``MEMLANE_ENGINE=off``
(every call answered in the server's own process). The protocol's own
rules (versions, ping, requests before ``initialize``, cancellation) are
checked line by line on the raw pipes; failing open is in
``test_mcp_fail_open.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, InitializeResult, TextContent
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from helpers import NOW, Cli, wait_for
from memlane.core import link
from memlane.engine.shared.tool_catalog import SPECS
from memlane.hosts.mcp.config import memlane_command, render_config
from memlane.hosts.mcp.thin import PROTOCOL_VERSIONS
from memlane.hosts.mcp.tools import error_result, success_result

pytestmark = pytest.mark.subprocess

# A hung server fails the test instead of hanging the run.
TEST_TIMEOUT_S = 90
#: The server as the ``memlane`` script starts it.
SERVER = [sys.executable, "-m", "memlane.cli.fast", "mcp"]
ENGINE, IN_PROCESS = "engine", "in-process"


def server_env(mode: str = ENGINE, **extra: str) -> dict[str, str]:
    """This test's environment (its own MEMLANE_HOME), lexical, on the suite's clock."""
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_NOW": NOW.isoformat()}
    if mode == IN_PROCESS:
        env["MEMLANE_ENGINE"] = "off"
    env.update(extra)
    return env


def server_params(project: Path, env: dict[str, str]) -> StdioServerParameters:
    # The SDK passes on only a safe whitelist unless given the environment:
    # the test's MEMLANE_HOME, cache and PYTHONPATH must reach the server.
    return StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "-C", str(project)], env=env)


@asynccontextmanager
async def connect(
    project: Path, env: dict[str, str], errlog: Path
) -> AsyncIterator[tuple[ClientSession, InitializeResult]]:
    """An SDK client session with a real ``memlane mcp``, initialized."""
    with errlog.open("a") as err:
        async with (
            stdio_client(server_params(project, env), errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session, await session.initialize()


def engine_place(env: dict[str, str]) -> link.Place:
    """Where the engine of a server started with *env* is (its variables key it)."""
    return link.Place(key=link.engine_key(env))


async def engine_serving(env: dict[str, str]) -> None:
    """Wait until the engine the server started listens (its info file is written then)."""
    info = Path(engine_place(env).info)
    await anyio.to_thread.run_sync(lambda: wait_for(info.exists, 60, "the engine"))


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S):
            await test()

    anyio.run(bounded)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def ok(session: ClientSession, name: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, text_of(result)
    return result


async def error(session: ClientSession, name: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, text_of(result)
    return result


@pytest.fixture(params=[ENGINE, IN_PROCESS])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[Path]:
    """The server's stderr; no test may leave a traceback in it."""
    path = tmp_path / "server-stderr.log"
    yield path
    assert "Traceback" not in (path.read_text() if path.exists() else "")


# -- what it says about itself --------------------------------------------------------------


def test_lists_every_tool_with_its_schema_and_the_ladder(project: Path, errlog: Path) -> None:
    async def body() -> None:
        async with connect(project, server_env(IN_PROCESS), errlog) as (session, init):
            assert init.server_info.name == "memlane"
            assert init.protocol_version == LATEST_HANDSHAKE_VERSION
            assert init.capabilities.tools is not None
            assert init.instructions and "memory_expand" in init.instructions
            listed = (await session.list_tools()).tools

        assert [t.name for t in listed] == [s.name for s in SPECS]
        for tool, spec in zip(listed, SPECS, strict=True):
            assert tool.description == spec.description
            assert tool.input_schema == spec.json_schema()
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        search = listed[[t.name for t in listed].index("memory_search")]
        assert search.description is not None
        for rung in ("memory_search", "memory_expand", "memory_transcript"):
            assert rung in search.description
        assert search.input_schema["required"] == ["query"]

    run(body)


def test_each_tool_says_its_title_and_effect(project: Path, errlog: Path) -> None:
    async def body() -> None:
        async with connect(project, server_env(IN_PROCESS), errlog) as (session, _):
            listed = (await session.list_tools()).tools

        by_name = {tool.name: tool for tool in listed}
        for tool in listed:
            assert tool.title and tool.annotations is not None
            assert tool.annotations.title == tool.title
            assert tool.annotations.open_world_hint is False  # this machine's memory only
        read_only = {
            n for n, t in by_name.items() if t.annotations and t.annotations.read_only_hint
        }
        assert read_only == {
            "memory_search",
            "memory_expand",
            "memory_transcript",
            "memory_similar",
            "memory_status",
        }
        destructive = {
            n for n, t in by_name.items() if t.annotations and t.annotations.destructive_hint
        }
        # forget removes an entry; memory_topic's remove action removes one too.
        assert destructive == {"memory_forget", "memory_topic"}
        for name in read_only:
            annotations = by_name[name].annotations
            assert annotations is not None and annotations.idempotent_hint
        for name in ("memory_write", "memory_compact", "memory_forget", "memory_topic"):
            annotations = by_name[name].annotations
            assert annotations is not None and not annotations.idempotent_hint

    run(body)


def test_the_server_speaks_every_handshake_version_of_the_sdk() -> None:
    # The SDK's modern revisions (a stateless envelope, no initialize) are not
    # spoken: the SDK's own client falls back to the handshake with such a server.
    assert PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


def test_the_sdks_high_level_client_falls_back_to_the_handshake(project: Path) -> None:
    # mcp.Client probes `server/discover` (the stateless revision) first; a
    # handshake server answers -32601 and the client runs `initialize` instead.
    from mcp import Client

    async def body() -> None:
        async with Client(server_params(project, server_env(IN_PROCESS))) as client:
            assert client.protocol_version == LATEST_HANDSHAKE_VERSION
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == [s.name for s in SPECS]
            status = await client.call_tool("memory_status", {})
            assert not status.is_error and str(project) in text_of(status)

    run(body)


def test_results_map_to_text_structured_content_and_is_error() -> None:
    done = success_result("two hits", {"path": Path("/m/x.md"), "hits": [1, 2]})
    parsed = CallToolResult.model_validate(done)
    assert not parsed.is_error
    assert parsed.structured_content == {"path": "/m/x.md", "hits": [1, 2]}
    assert [c.model_dump(exclude_none=True) for c in parsed.content] == [
        {"type": "text", "text": "two hits"}
    ]
    failed = CallToolResult.model_validate(error_result("no chunk abc", "run memory_search first"))
    assert failed.is_error
    assert failed.structured_content == {"error": "no chunk abc", "hint": "run memory_search first"}
    assert text_of(failed) == "no chunk abc\nHint: run memory_search first"


# -- the tools, through the engine and in the server's own process ---------------------------


def test_write_search_expand_status_with_structured_results(
    project: Path, mode: str, errlog: Path
) -> None:
    env = server_env(mode)

    async def body() -> None:
        async with connect(project, env, errlog) as (session, _):
            if mode == ENGINE:
                await engine_serving(env)  # every call below is the engine's
            wrote = await ok(
                session, "memory_write", text="We chose Postgres over MySQL for the ledger."
            )
            entry = wrote.structured_content
            assert isinstance(entry, dict)
            assert "Postgres over MySQL" in entry["text"]
            # No Claude Code session started this server: the default anchor.
            assert entry["anchor"]["transcript"] == "none"
            assert Path(entry["path"]).is_relative_to(project)
            assert text_of(wrote).startswith("Saved to ")

            found = await ok(session, "memory_search", query="ledger database Postgres", k=3)
            result = found.structured_content
            assert isinstance(result, dict)
            assert result["hits"], text_of(found)
            assert not result.get("notices"), result  # the whole search, nothing left out
            hit = result["hits"][0]
            assert "Postgres" in hit["content"]
            assert hit["chunk_hash"] in text_of(found)

            expanded = await ok(session, "memory_expand", chunk_hash=hit["chunk_hash"])
            section = expanded.structured_content
            assert isinstance(section, dict)
            assert section["chunk_hash"] == hit["chunk_hash"]
            assert "Postgres over MySQL" in section["content"]
            assert section["anchor"]["turn"] == entry["anchor"]["turn"]
            assert "Postgres over MySQL" in text_of(expanded)

            status = await ok(session, "memory_status")
            assert isinstance(status.structured_content, dict)
            assert str(project) in text_of(status)

    run(body)
    failures = Path(link.Place().failures)
    assert not failures.exists(), failures.read_text()  # no call failed open


def test_errors_are_tool_results_and_the_server_keeps_serving(
    project: Path, mode: str, errlog: Path
) -> None:
    async def body() -> None:
        async with connect(project, server_env(mode), errlog) as (session, _):
            missing = await error(session, "memory_search")
            assert "missing required argument 'query'" in text_of(missing)
            assert missing.structured_content == {
                "error": "memory_search: missing required argument 'query'",
                "hint": None,
            }

            unknown = await error(session, "memory_expand", chunk_hash="0123456789abcdef")
            assert "0123456789abcdef" in text_of(unknown)

            bad_type = await error(session, "memory_search", query="x", k="five")
            assert "k must be an integer" in text_of(bad_type)

            extra = await error(session, "memory_status", verbose=True)
            assert "unknown argument(s) verbose" in text_of(extra)
            assert text_of(extra).endswith("\nHint: it takes: no arguments")
            assert extra.structured_content == {
                "error": "memory_status: unknown argument(s) verbose",
                "hint": "it takes: no arguments",
            }

            no_tool = await error(session, "memory_teleport")
            assert "unknown tool 'memory_teleport'" in text_of(no_tool)

            forget = await error(session, "memory_forget")
            assert "Hint: " in text_of(forget)

            # Still alive and answering.
            await ok(session, "memory_status")

    run(body)


def test_concurrent_calls_all_come_back_clean(project: Path, mode: str, errlog: Path) -> None:
    async def body() -> None:
        async with connect(project, server_env(mode), errlog) as (session, _):
            results: list[CallToolResult] = []

            async def call(name: str, **arguments: Any) -> None:
                result = await session.call_tool(name, arguments)
                assert isinstance(result, CallToolResult)
                results.append(result)

            # Sent at once; the server answers them in order, one at a time.
            async with anyio.create_task_group() as group:
                for n in range(5):
                    group.start_soon(lambda n=n: call("memory_write", text=f"Parallel note {n}."))
                    group.start_soon(lambda: call("memory_search", query="parallel note"))
                group.start_soon(lambda: call("memory_status"))
            assert len(results) == 11
            assert [text_of(r) for r in results if r.is_error] == []

            found = await ok(session, "memory_search", query="parallel note", k=10)
            assert isinstance(found.structured_content, dict)
            assert len(found.structured_content["hits"]) == 5

    run(body)


def test_a_write_or_topic_add_is_the_first_hit_of_the_next_search(
    project: Path, errlog: Path
) -> None:
    async def body() -> None:
        async with connect(project, server_env(), errlog) as (session, _):
            await ok(session, "memory_write", text="The deploy script needs AWS_PROFILE=staging.")
            await ok(session, "memory_search", query="deploy script")  # indexed now
            await ok(session, "memory_write", text="Staging deploys need the release manager.")
            found = await ok(session, "memory_search", query="release manager staging deploy")
            result = found.structured_content
            assert isinstance(result, dict)
            assert result["hits"] and "release manager" in result["hits"][0]["content"]

            await ok(
                session,
                "memory_topic",
                action="add",
                topic="release",
                title="Release approval",
                content="The release manager approves production deploys.",
            )
            topic = await ok(
                session, "memory_topic", action="search", query="who approves production deploys"
            )
            matches = topic.structured_content
            assert isinstance(matches, dict)
            assert matches["matches"] and matches["matches"][0]["title"] == "Release approval"

    run(body)


def test_hybrid_search_with_the_bundled_model(project: Path, errlog: Path) -> None:
    env = server_env()
    del env["MEMLANE_EMBEDDING_PROVIDER"]  # the bundled model, loaded by the engine

    async def body() -> None:
        async with connect(project, env, errlog) as (session, _):
            await ok(session, "memory_write", text="Deploys go out on Tuesdays, never Fridays.")
            await ok(session, "memory_write", text="The cat's name is Miso.")
            # No word in common with the note: only the embeddings can find it.
            found = await ok(
                session, "memory_search", query="when do we ship releases", mode="hybrid"
            )
            result = found.structured_content
            assert isinstance(result, dict)
            assert result["mode"] == "hybrid"
            assert result["hits"] and "Tuesdays" in result["hits"][0]["content"]

    run(body)


# -- the protocol, line by line ---------------------------------------------------------------


class Lines:
    """A ``memlane mcp`` process on raw pipes."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*SERVER, "-C", str(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def send(self, *messages: dict[str, Any]) -> None:
        """Written together, in one write."""
        self.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in messages))
        self.stdin.flush()

    def read(self) -> dict[str, Any]:
        line = self.stdout.readline()
        assert line, f"memlane mcp closed its output: {self.stop()}"
        message: dict[str, Any] = json.loads(line)
        return message

    def stop(self) -> str:
        """Close stdin and wait for the exit; its stderr (the exit status must be 0)."""
        if not self.stdin.closed:
            self.stdin.close()
        try:
            code = self.proc.wait(TEST_TIMEOUT_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        for stream in (self.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        assert code == 0, err
        assert "Traceback" not in err, err
        return err


def request(request_id: int, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def initialize(request_id: int = 1, version: str = "2025-06-18") -> dict[str, Any]:
    return request(
        request_id,
        "initialize",
        protocolVersion=version,
        capabilities={},
        clientInfo={"name": "test", "version": "0"},
    )


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_the_handshake_ping_and_what_comes_before_it(project: Path) -> None:
    server = Lines(project, server_env(IN_PROCESS))
    try:
        server.send(request(1, "ping"))
        assert server.read() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        server.send(request(2, "tools/list"))
        early = server.read()
        assert early["id"] == 2 and early["error"]["code"] == -32602
        assert "initialize first" in early["error"]["message"]
        server.send(request(3, "resources/list"))
        unknown = server.read()
        assert unknown["id"] == 3 and unknown["error"]["code"] == -32601
        assert unknown["error"]["data"] == "resources/list"

        for request_id, asked, agreed in (
            (4, "2024-11-05", "2024-11-05"),
            (5, "2025-03-26", "2025-03-26"),
            (6, "1999-01-01", LATEST_HANDSHAKE_VERSION),
        ):
            server.send(initialize(request_id, asked))
            answer = server.read()
            assert answer["id"] == request_id, answer
            init = InitializeResult.model_validate(answer["result"])
            assert init.protocol_version == agreed
        server.send(request(7, "initialize", capabilities={}))
        bad = server.read()
        assert bad["id"] == 7 and bad["error"]["code"] == -32602
        assert "protocolVersion" in bad["error"]["message"]

        # The SDK's client probes the modern era first; a handshake server says no.
        server.send(request(8, "server/discover"))
        assert server.read()["error"]["code"] == -32601
        server.send(INITIALIZED, {"jsonrpc": "2.0", "method": "notifications/whatever"})
        server.send(request(9, "tools/list", cursor="anything"))
        listed = server.read()
        assert [t["name"] for t in listed["result"]["tools"]] == [s.name for s in SPECS]
    finally:
        server.stop()


def test_a_cancelled_call_is_never_answered(project: Path) -> None:
    """While the first call waits for the engine (this test holds the lock every
    starter takes), the second is cancelled: it is skipped, the others answered."""
    import fcntl

    server = Lines(project, server_env())
    place = link.Place()
    link.make_private_dir(place.directory)
    held = os.open(place.spawn_lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        server.send(initialize(), INITIALIZED)
        assert server.read()["id"] == 1
        server.send(
            request(2, "tools/call", name="memory_write", arguments={"text": "first note"}),
            request(3, "tools/call", name="memory_write", arguments={"text": "cancelled note"}),
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
            request(4, "ping"),
        )
        # Lines are read in order: the cancel was taken before the ping's answer.
        assert server.read() == {"jsonrpc": "2.0", "id": 4, "result": {}}
        fcntl.flock(held, fcntl.LOCK_UN)
        server.send(request(5, "tools/call", name="memory_write", arguments={"text": "last note"}))
        answers = [server.read(), server.read()]
        assert [a["id"] for a in answers] == [2, 5], answers
        assert not any(a["result"].get("isError") for a in answers), answers
    finally:
        os.close(held)
        server.stop()
    notes = "".join(p.read_text() for p in (project / ".memsearch" / "memory").glob("*.md"))
    assert "first note" in notes and "last note" in notes
    assert "cancelled note" not in notes


def test_the_server_exits_0_when_the_client_closes_stdin(project: Path, mode: str) -> None:
    # Our own process (not the SDK's client, which terminates a server that
    # lingers): nothing but the closed stdin can end it.
    server = Lines(project, server_env(mode))
    try:
        server.send(initialize(), INITIALIZED)
        assert InitializeResult.model_validate(server.read()["result"])
        call = {"name": "memory_write", "arguments": {"text": "A note before closing."}}
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        reply = server.read()
        assert reply["id"] == 2 and not reply["result"].get("isError"), reply
    finally:
        server.stop()
    notes = "".join(p.read_text() for p in (project / ".memsearch" / "memory").glob("*.md"))
    assert "A note before closing." in notes


def _zombie_children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def test_an_engine_stopped_between_calls_is_started_again(project: Path) -> None:
    """`memlane engine stop` while a client runs: it stops at once (the engine is
    this server's child), and the server's next call starts the next engine."""
    env = server_env()
    info = Path(engine_place(env).info)
    server = Lines(project, env)
    try:
        server.send(initialize(), INITIALIZED)
        assert server.read()["id"] == 1
        wait_for(info.exists, 60, "the engine")
        call = {"name": "memory_write", "arguments": {"text": "Staging runs on port 2222."}}
        server.send(request(2, "tools/call", **call))
        assert not server.read()["result"].get("isError")

        stopped = subprocess.run(
            [*SERVER[:-1], "engine", "stop"], env=env, capture_output=True, text=True, timeout=60
        )
        assert stopped.returncode == 0 and ": stopped" in stopped.stdout, stopped
        assert not info.exists()

        search = {"name": "memory_search", "arguments": {"query": "staging port"}}
        server.send(request(3, "tools/call", **search))
        found = server.read()["result"]["structuredContent"]
        assert "2222" in found["hits"][0]["content"] and "notices" not in found, found
        assert info.exists()  # the next engine
        assert _zombie_children(server.proc.pid) == []  # the stopped one was reaped
    finally:
        server.stop()
    failures = Path(link.Place().failures)
    assert not failures.exists(), failures.read_text()


def test_codex_hooks_are_answered_through_the_running_server(project: Path) -> None:
    """What Codex's ``mcp_tool`` hooks call (``memlane install codex``): the unlisted
    ``codex_hook`` tool, its arguments the hook input, its text Codex's hook output,
    answered by the engine as the Codex host."""
    from memlane.hosts.codex.install import HOOKS, hook_input

    env = server_env()
    server = Lines(project, env)
    templates = {event: hook_input(fields) for event, _, _, fields in HOOKS}
    rollout = project / "rollout-2026-01-01T00-00-00-codex-1.jsonl"

    def hook(request_id: int, event: str, **fields: Any) -> str:
        values = {
            "hook_event_name": event,
            "session_id": "codex-1",
            "transcript_path": str(rollout),
            "cwd": str(project),
            **fields,
        }
        arguments = {name: values[name] for name in templates[event]}
        server.send(request(request_id, "tools/call", name="codex_hook", arguments=arguments))
        answer = server.read()
        assert answer["id"] == request_id and not answer["result"].get("isError"), answer
        text: str = answer["result"]["content"][0]["text"]
        return text

    try:
        server.send(initialize(), INITIALIZED)
        assert server.read()["id"] == 1
        server.send(request(2, "tools/list"))
        listed = [tool["name"] for tool in server.read()["result"]["tools"]]
        assert "codex_hook" not in listed and "memory_search" in listed  # the model never sees it

        started = json.loads(hook(3, "SessionStart", source="startup"))
        assert started["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        assert "memory" in started["hookSpecificOutput"]["additionalContext"].lower()
        # Claude goes on because a Stop hook asked it to: not the end of a turn, no answer.
        stop = {"turn_id": "t1", "last_assistant_message": None, "stop_hook_active": True}
        assert hook(4, "Stop", **stop) == ""
    finally:
        server.stop()
    failures = Path(engine_place(env).failures)
    assert not failures.exists(), failures.read_text()


def test_the_hot_path_imports_neither_the_engine_nor_the_sdk() -> None:
    # What `memlane mcp` imports before its first tools/call: its whole start-up cost.
    probe = (
        "import sys, memlane.cli.fast, memlane.hosts.mcp.thin as thin; "
        "import json; thin.tool_definitions(); print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    heavy = ("mcp", "mcp_types", "pydantic", "anyio", "typer", "numpy", "sqlite3", "httpx")
    assert not {m for m in loaded if m.split(".")[0] in heavy}
    ours = {m for m in loaded if m.startswith("memlane.")}
    for package in ("memlane.store", "memlane.index", "memlane.embed", "memlane.llm"):
        assert not {m for m in ours if m.startswith(package)}, package
    engine = {m for m in ours if m.startswith("memlane.engine.")}
    assert engine == {
        "memlane.engine.shared",
        "memlane.engine.shared.tool_catalog",
        "memlane.engine.shared.tool_outputs",
        "memlane.engine.shared.tool_spec",
    }


def test_other_commands_never_import_the_sdk() -> None:
    probe = (
        "import sys, memlane.cli.main; "
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')]; "
        "print(loaded)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_mcp_help_is_the_full_command_lines() -> None:
    done = subprocess.run(
        [*SERVER, "--help"], capture_output=True, text=True, timeout=TEST_TIMEOUT_S, check=False
    )
    assert done.returncode == 0 and "Serve the memory tools over MCP" in done.stdout


# -- install mcp --print ------------------------------------------------------------------


def test_install_mcp_print_names_the_running_memlane(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memlane.cli.main", "install", "mcp", "--print"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    # Run as ``python -m``: the command is this interpreter, absolute, and the
    # entry the ``memlane`` script runs (the server starts without the full CLI).
    command = [sys.executable, "-m", "memlane.cli.fast", "mcp"]
    assert re.search(rf"^claude mcp add memlane .*-- {re.escape(' '.join(command))}$", out, re.M)
    assert out == render_config([sys.executable, "-m", "memlane.cli.fast"])


def test_rendered_config_parses_for_each_client(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "memlane"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    command = memlane_command(str(script))
    assert command == [str(script)]
    env = {"MEMLANE_HOME": "/data/memory", "MEMLANE_CAPTURE": "off"}
    out = render_config(command, env)

    assert (
        f"claude mcp add memlane -e MEMLANE_HOME=/data/memory -e MEMLANE_CAPTURE=off -- {script} mcp"
        in out
    )
    blocks = re.findall(r"^\{\n.*?^\}$", out, flags=re.S | re.M)
    assert len(blocks) == 2  # Claude Code's .mcp.json, Cursor's mcp.json
    claude, cursor = (json.loads(b)["mcpServers"]["memlane"] for b in blocks)
    assert claude == {"type": "stdio", "command": str(script), "args": ["mcp"], "env": env}
    assert cursor == {"command": str(script), "args": ["mcp"], "env": env}
    assert "~/.cursor/mcp.json" in out and ".cursor/mcp.json" in out

    toml_text = out[out.index("[mcp_servers.memlane]") :]
    codex = tomllib.loads(toml_text)["mcp_servers"]["memlane"]
    assert codex == {"command": str(script), "args": ["mcp"], "env": env}
    assert "~/.codex/config.toml" in out


def test_memlane_command_falls_back_to_python_m() -> None:
    assert memlane_command("/somewhere/pytest", "/py/bin/python3") == [
        "/py/bin/python3",
        "-m",
        "memlane.cli.fast",
    ]


def test_install_mcp_without_print_says_what_to_run(cli: Cli) -> None:
    done = cli("install", "mcp")
    assert done.returncode == 1
    assert "install mcp --print" in done.stderr
