"""The MCP server in git worktrees: a memory written through one worktree's
server is found through another's, with the warm engine behind them and
without it (ADR 0035). The server is the real ``memlane mcp`` process, the
official SDK's client its peer, each worktree made by ``git worktree add``."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from git_worktrees import add_worktree, repository
from helpers import NOW

pytestmark = pytest.mark.subprocess

SERVER = [sys.executable, "-m", "memlane.cli.fast", "mcp"]
TEST_TIMEOUT_S = 90


@asynccontextmanager
async def connect(where: Path, env: dict[str, str], errlog: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "-C", str(where)], env=env)
    with errlog.open("a") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[str, Any]:
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text, result.structured_content


@pytest.mark.parametrize("engine", ["on", "off"])
def test_a_memory_written_in_one_worktree_is_found_from_another(
    tmp_path: Path, engine: str
) -> None:
    main = repository(tmp_path)
    a = add_worktree(main, tmp_path / "app-a", "a")
    b = add_worktree(main, tmp_path / "app-b", "b")
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_NOW": NOW.isoformat()}
    if engine == "off":
        env["MEMLANE_ENGINE"] = "off"
    errlog = tmp_path / "server-stderr.log"

    async def body() -> None:
        async with connect(a, env, errlog) as session:
            _, entry = await call(
                session, "memory_write", text="The ledger keeps amounts in integer cents."
            )
            assert Path(entry["path"]).parent == main / ".memsearch" / "memory"
        async with connect(b, env, errlog) as session:
            _, found = await call(session, "memory_search", query="ledger integer cents")
            assert any("integer cents" in hit["content"] for hit in found["hits"]), found
            status, _ = await call(session, "memory_status")
            assert f"shared with the main worktree at {main}" in status

    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S):
            await body()

    anyio.run(bounded)
    assert "Traceback" not in (errlog.read_text() if errlog.exists() else "")
