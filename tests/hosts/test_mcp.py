"""``memlane mcp``: the tools over MCP, driven by the official SDK's client;
and ``install mcp --print``.

The protocol tests run the server in this process: memlane's ``Engine`` and
``build_server`` (what ``memlane mcp`` serves) on the SDK's in-memory
streams, initialize handshake and JSON-RPC messages included, on the test's
clock. The ``subprocess`` smoke tests run the real ``memlane mcp`` for what
only a process shows: the stdio wiring (through the SDK's stdio client),
the exit when the client closes stdin, a fresh interpreter's imports.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.memory import create_client_server_memory_streams
from mcp.types import LATEST_PROTOCOL_VERSION, CallToolResult, InitializeResult, TextContent

from helpers import Cli, FixedClock
from memlane.engine.sessions.registry import close_stores
from memlane.engine.tools.catalog import SPECS
from memlane.hosts.mcp.config import memlane_command, render_config
from memlane.hosts.mcp.server import Engine, build_server

# A hung server fails the test instead of hanging the run.
TEST_TIMEOUT_S = 60


@pytest.fixture
def lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")


@asynccontextmanager
async def connect(project: Path, clock: FixedClock) -> AsyncIterator[tuple[ClientSession, Any]]:
    """An SDK client session with memlane's MCP server, in this process."""
    engine = Engine(project, clock=clock)
    engine.start()
    server = build_server(engine)
    try:
        async with (
            create_client_server_memory_streams() as (client_streams, server_streams),
            anyio.create_task_group() as group,
        ):
            group.start_soon(server.run, *server_streams, server.create_initialization_options())
            async with ClientSession(*client_streams) as session:
                yield session, await session.initialize()
            await client_streams[1].aclose()  # EOF: the server's run() returns
    finally:
        engine.close()
        close_stores()


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S):
            await test()

    anyio.run(bounded)


def _text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def _ok(session: ClientSession, name: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, _text(result)
    return result


async def _error(session: ClientSession, name: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, _text(result)
    return result


@pytest.mark.usefixtures("lexical")
def test_lists_every_tool_with_its_schema_and_the_ladder(project: Path, clock: FixedClock) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, init):
            assert init.server_info.name == "memlane"
            assert init.instructions and "memory_expand" in init.instructions
            listed = (await session.list_tools()).tools

        assert [t.name for t in listed] == [s.name for s in SPECS]
        for tool, spec in zip(listed, SPECS, strict=True):
            assert tool.description == spec.description
            assert tool.input_schema == spec.json_schema()
        search = listed[[t.name for t in listed].index("memory_search")]
        assert search.description is not None
        for rung in ("memory_search", "memory_expand", "memory_transcript"):
            assert rung in search.description
        assert search.input_schema["required"] == ["query"]

    run(body)


def test_each_tool_says_its_title_and_effect(project: Path, clock: FixedClock) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, _):
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


@pytest.mark.usefixtures("lexical")
def test_write_search_expand_status_with_structured_results(
    project: Path, clock: FixedClock, capfd: pytest.CaptureFixture[str]
) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, _):
            wrote = await _ok(
                session, "memory_write", text="We chose Postgres over MySQL for the ledger."
            )
            entry = wrote.structured_content
            assert isinstance(entry, dict)
            assert "Postgres over MySQL" in entry["text"]
            # No session over MCP: the entry carries the default anchor.
            assert entry["anchor"]["transcript"] == "none"
            assert Path(entry["path"]).is_relative_to(project)
            assert _text(wrote).startswith("Saved to ")

            found = await _ok(session, "memory_search", query="ledger database Postgres", k=3)
            result = found.structured_content
            assert isinstance(result, dict)
            assert result["hits"], _text(found)
            hit = result["hits"][0]
            assert "Postgres" in hit["content"]
            assert hit["chunk_hash"] in _text(found)

            expanded = await _ok(session, "memory_expand", chunk_hash=hit["chunk_hash"])
            section = expanded.structured_content
            assert isinstance(section, dict)
            assert section["chunk_hash"] == hit["chunk_hash"]
            assert "Postgres over MySQL" in section["content"]
            assert section["anchor"]["turn"] == entry["anchor"]["turn"]
            assert "Postgres over MySQL" in _text(expanded)

            status = await _ok(session, "memory_status")
            assert isinstance(status.structured_content, dict)
            assert _text(status).strip()

    run(body)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.usefixtures("lexical")
def test_errors_are_tool_results_and_the_server_keeps_serving(
    project: Path, clock: FixedClock, capfd: pytest.CaptureFixture[str]
) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, _):
            missing = await _error(session, "memory_search")
            assert "missing required argument 'query'" in _text(missing)
            assert missing.structured_content == {
                "error": "memory_search: missing required argument 'query'",
                "hint": None,
            }

            unknown = await _error(session, "memory_expand", chunk_hash="0123456789abcdef")
            assert "0123456789abcdef" in _text(unknown)

            bad_type = await _error(session, "memory_search", query="x", k="five")
            assert "k must be an integer" in _text(bad_type)

            extra = await _error(session, "memory_status", verbose=True)
            assert "unknown argument(s) verbose" in _text(extra)
            assert "Hint: it takes: no arguments" in _text(extra)

            no_tool = await _error(session, "memory_teleport")
            assert "unknown tool 'memory_teleport'" in _text(no_tool)

            forget = await _error(session, "memory_forget")
            assert "Hint: " in _text(forget)

            # Still alive and answering.
            await _ok(session, "memory_status")

    run(body)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.usefixtures("lexical")
def test_concurrent_calls_all_come_back_clean(
    project: Path, clock: FixedClock, capfd: pytest.CaptureFixture[str]
) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, _):
            results: list[CallToolResult] = []

            async def call(name: str, **arguments: Any) -> None:
                result = await session.call_tool(name, arguments)
                assert isinstance(result, CallToolResult)
                results.append(result)

            # The SDK serves these at once; the engine queues them on its one thread.
            async with anyio.create_task_group() as group:
                for n in range(5):
                    group.start_soon(lambda n=n: call("memory_write", text=f"Parallel note {n}."))
                    group.start_soon(lambda: call("memory_search", query="parallel note"))
                group.start_soon(lambda: call("memory_status"))
            assert [_text(r) for r in results if r.is_error] == []

            found = await _ok(session, "memory_search", query="parallel note", k=10)
            assert isinstance(found.structured_content, dict)
            assert len(found.structured_content["hits"]) == 5

    run(body)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.usefixtures("lexical")
def test_a_write_or_topic_add_is_the_first_hit_of_the_next_search(
    project: Path, clock: FixedClock
) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, _):
            await _ok(session, "memory_write", text="The deploy script needs AWS_PROFILE=staging.")
            await _ok(session, "memory_search", query="deploy script")  # indexed now
            await _ok(session, "memory_write", text="Staging deploys need the release manager.")
            found = await _ok(session, "memory_search", query="release manager staging deploy")
            result = found.structured_content
            assert isinstance(result, dict)
            assert result["hits"] and "release manager" in result["hits"][0]["content"]

            await _ok(
                session,
                "memory_topic",
                action="add",
                topic="release",
                title="Release approval",
                content="The release manager approves production deploys.",
            )
            topic = await _ok(
                session, "memory_topic", action="search", query="who approves production deploys"
            )
            matches = topic.structured_content
            assert isinstance(matches, dict)
            assert matches["matches"] and matches["matches"][0]["title"] == "Release approval"

    run(body)


def test_hybrid_search_with_the_bundled_model(project: Path, clock: FixedClock) -> None:
    async def body() -> None:
        async with connect(project, clock) as (session, _):
            await _ok(session, "memory_write", text="Deploys go out on Tuesdays, never Fridays.")
            await _ok(session, "memory_write", text="The cat's name is Miso.")
            # No word in common with the note: only the embeddings can find it.
            found = await _ok(
                session, "memory_search", query="when do we ship releases", mode="hybrid"
            )
            result = found.structured_content
            assert isinstance(result, dict)
            assert result["mode"] == "hybrid"
            assert result["hits"] and "Tuesdays" in result["hits"][0]["content"]

    run(body)


# -- the real process ---------------------------------------------------------------------


def _server_params(project: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane.cli.main", "mcp", "-C", str(project)],
        # The SDK passes on only a safe whitelist; the test's MEMLANE_HOME,
        # cache and PYTHONPATH must reach the server.
        env={**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"},
    )


@pytest.mark.subprocess
def test_memlane_mcp_serves_over_stdio(project: Path, tmp_path: Path) -> None:
    errors = tmp_path / "server-stderr.log"

    async def body() -> None:
        with errors.open("w") as errlog:
            async with (
                stdio_client(_server_params(project), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.server_info.name == "memlane"
                listed = (await session.list_tools()).tools
                assert [t.name for t in listed] == [s.name for s in SPECS]
                wrote = await _ok(session, "memory_write", text="Staging runs on port 2222.")
                assert _text(wrote).startswith("Saved to ")
                found = await _ok(session, "memory_search", query="staging port")
                assert "2222" in _text(found)

    run(body)
    assert "Traceback" not in errors.read_text()


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


@pytest.mark.subprocess
def test_the_server_exits_0_when_the_client_closes_stdin(project: Path) -> None:
    # Our own process (not the SDK's client, which terminates a server that
    # lingers): nothing but the closed stdin can end it.
    params = _server_params(project)
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        initialize = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        }
        proc.stdin.write(
            _line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        )
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and InitializeResult.model_validate(reply["result"])
        proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = {"name": "memory_write", "arguments": {"text": "A note before closing."}}
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 2 and not reply["result"].get("isError"), reply
        proc.stdin.close()
        code = proc.wait(TEST_TIMEOUT_S)
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        assert code == 0, stderr
        assert "Traceback" not in stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    notes = "".join(p.read_text() for p in (project / ".memsearch" / "memory").glob("*.md"))
    assert "A note before closing." in notes


def test_results_map_to_text_structured_content_and_is_error() -> None:
    from memlane.engine.tools.spec import ToolResult
    from memlane.hosts.mcp.server import error_result, success_result

    ok = success_result(ToolResult("two hits", {"path": Path("/m/x.md"), "hits": [1, 2]}))
    assert not ok.is_error
    assert ok.structured_content == {"path": "/m/x.md", "hits": [1, 2]}
    assert [c.model_dump(exclude_none=True) for c in ok.content] == [
        {"type": "text", "text": "two hits"}
    ]
    failed = error_result("no chunk abc", "run memory_search first")
    assert failed.is_error
    assert failed.structured_content == {"error": "no chunk abc", "hint": "run memory_search first"}
    assert isinstance(failed.content[0], TextContent)
    assert failed.content[0].text == "no chunk abc\nHint: run memory_search first"


# -- install mcp --print ------------------------------------------------------------------


@pytest.mark.subprocess
def test_install_mcp_print_names_the_running_memlane(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memlane.cli.main", "install", "mcp", "--print"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    # Run as ``python -m``: the command is this interpreter, absolute.
    command = [sys.executable, "-m", "memlane.cli.main", "mcp"]
    assert f"claude mcp add memlane -- {' '.join(command)}" in out
    assert out == render_config([sys.executable, "-m", "memlane.cli.main"])


def test_rendered_config_parses_for_each_client(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "memlane"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    command = memlane_command(str(script))
    assert command == [str(script)]
    out = render_config(command)

    assert f"claude mcp add memlane -- {script} mcp" in out
    blocks = re.findall(r"^\{\n.*?^\}$", out, flags=re.S | re.M)
    assert len(blocks) == 2  # Claude Code's .mcp.json, Cursor's mcp.json
    claude, cursor = (json.loads(b)["mcpServers"]["memlane"] for b in blocks)
    assert claude == {"type": "stdio", "command": str(script), "args": ["mcp"]}
    assert cursor == {"command": str(script), "args": ["mcp"]}
    assert "~/.cursor/mcp.json" in out and ".cursor/mcp.json" in out

    toml_text = out[out.index("[mcp_servers.memlane]") :]
    codex = tomllib.loads(toml_text)["mcp_servers"]["memlane"]
    assert codex == {"command": str(script), "args": ["mcp"]}
    assert "~/.codex/config.toml" in out


def test_memlane_command_falls_back_to_python_m() -> None:
    assert memlane_command("/somewhere/pytest", "/py/bin/python3") == [
        "/py/bin/python3",
        "-m",
        "memlane.cli.main",
    ]


@pytest.mark.subprocess
def test_other_commands_never_import_the_sdk() -> None:
    # The SDK costs ~0.5 s to import; only `memlane mcp` may pay it.
    probe = (
        "import sys, memlane.cli.main; "
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')]; "
        "print(loaded)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_install_mcp_without_print_says_what_to_run(cli: Cli) -> None:
    done = cli("install", "mcp")
    assert done.returncode == 1
    assert "install mcp --print" in done.stderr
