"""``memlane mcp``: the tools over MCP, driven by the official SDK's stdio client
against a real ``memlane mcp`` subprocess; and ``install mcp --print``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.client.stdio as mcp_stdio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from memlane.engine.tools import SPECS
from memlane.hosts.mcp.config import memlane_command, render_config


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


class Server:
    """How the test reaches the subprocess behind the SDK's client."""

    def __init__(self, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self.process: Any = None

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@pytest.fixture
def server_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Server:
    server = Server(tmp_path / "server-stderr.log")
    spawn = mcp_stdio._create_platform_compatible_process

    # The SDK's client owns the process; keep a handle to check how it ended.
    async def spawn_and_keep(*args: Any, **kwargs: Any) -> Any:
        server.process = await spawn(*args, **kwargs)
        return server.process

    monkeypatch.setattr(mcp_stdio, "_create_platform_compatible_process", spawn_and_keep)
    return server


def _params(project: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane.cli.main", "mcp", "-C", str(project)],
        # The SDK passes on only a safe whitelist; the test's MEMLANE_HOME,
        # cache and PYTHONPATH must reach the server.
        env={**os.environ, **env},
    )


@asynccontextmanager
async def connect(
    project: Path, server: Server, **env: str
) -> AsyncIterator[tuple[ClientSession, Any]]:
    with server.stderr_path.open("w") as errlog:
        async with (
            stdio_client(_params(project, **env), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            yield session, init


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        # A hung server fails the test instead of hanging the run.
        with anyio.fail_after(60):
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


@pytest.mark.subprocess
def test_lists_every_tool_with_its_schema_and_the_ladder(project: Path, server_log: Server) -> None:
    async def body() -> None:
        async with connect(project, server_log, MEMLANE_EMBEDDING_PROVIDER="none") as (
            session,
            init,
        ):
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


@pytest.mark.subprocess
def test_write_search_expand_status_with_structured_results(
    project: Path, server_log: Server
) -> None:
    async def body() -> None:
        async with connect(project, server_log, MEMLANE_EMBEDDING_PROVIDER="none") as (
            session,
            _,
        ):
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

        assert "Traceback" not in server_log.stderr

    run(body)


@pytest.mark.subprocess
def test_errors_are_tool_results_and_the_server_keeps_serving(
    project: Path, server_log: Server
) -> None:
    async def body() -> None:
        async with connect(project, server_log, MEMLANE_EMBEDDING_PROVIDER="none") as (
            session,
            _,
        ):
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

        assert "Traceback" not in server_log.stderr

    run(body)


@pytest.mark.subprocess
def test_concurrent_calls_all_come_back_clean(project: Path, server_log: Server) -> None:
    async def body() -> None:
        async with connect(project, server_log, MEMLANE_EMBEDDING_PROVIDER="none") as (
            session,
            _,
        ):
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

        assert "Traceback" not in server_log.stderr

    run(body)


@pytest.mark.subprocess
def test_hybrid_search_with_the_bundled_model(project: Path, server_log: Server) -> None:
    async def body() -> None:
        async with connect(project, server_log) as (session, _):
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


@pytest.mark.subprocess
def test_the_server_exits_when_the_client_closes(project: Path, server_log: Server) -> None:
    async def body() -> None:
        async with connect(project, server_log, MEMLANE_EMBEDDING_PROVIDER="none") as (
            session,
            _,
        ):
            await _ok(session, "memory_write", text="A note before closing.")
            closing = time.monotonic()
        closed_in = time.monotonic() - closing
        process = server_log.process
        assert process is not None
        # The SDK waits 2 s after closing stdin, then terminates: a clean exit code
        # within that window means the server left on its own.
        assert process.returncode == 0, server_log.stderr
        assert closed_in < 2.0

    run(body)


def test_results_map_to_text_structured_content_and_is_error() -> None:
    from memlane.engine.tools import ToolResult
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


@pytest.mark.subprocess
def test_install_mcp_without_print_says_what_to_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memlane.cli.main", "install", "mcp"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "install mcp --print" in done.stderr
