"""The environment an end-to-end test runs a real agent (Claude Code, Codex,
OpenCode) in: the test's own, less the variables that would steer the agent
or memlane elsewhere, plus memlane's source tree on PYTHONPATH so the hooks,
the MCP server and the engine the agent starts run this checkout's code."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def agent_env(drop: tuple[str, ...], **settings: str) -> dict[str, str]:
    """``os.environ`` without the variables starting with one of *drop*, with
    ``NO_COLOR``, this checkout's ``src`` first on ``PYTHONPATH``, and *settings*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    paths = (str(REPO / "src"), *os.environ.get("PYTHONPATH", "").split(os.pathsep))
    env.update(
        NO_COLOR="1",
        PYTHONPATH=os.pathsep.join(dict.fromkeys(p for p in paths if p)),
    )
    env.update(settings)
    return env
