"""memlane's OpenCode plugin fails open: with the memlane it was installed with gone, the
real OpenCode answers as it would without memlane, and nothing of memlane runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opencode_harness import OpencodeInstall, OpencodeWorld

from fake_llm import FakeModel, Reply

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


def test_a_missing_memlane_leaves_opencode_working(
    opencode_install: OpencodeInstall, model: FakeModel, tmp_path: Path
) -> None:
    from memlane.hosts.opencode.install import install

    world = OpencodeWorld(opencode_install, tmp_path, model.base_url)
    install(None, command=str(tmp_path / "gone" / "memlane"), env=world.install_env())
    model.agent(Reply.say("Answered without memory."))
    result = world.run("hello")
    assert result.returncode == 0, result.stderr
    assert "Answered without memory." in result.stdout
    request = model.agent_requests[-1]
    # OpenCode's own system prompt alone: the plugin appends its snapshot as another.
    assert [m["role"] for m in request.body["messages"]].count("system") == 1
    assert not (world.memlane_home / "engine").exists()
