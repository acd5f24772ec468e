"""memlane's own tool calls, results and /recall prompts are not session messages (issue 13).

Both transcript formats, read by the real ingestion into a real store; the
other tools' calls and results next to memlane's are kept.
"""

from __future__ import annotations

import json
from pathlib import Path

from _fixtures import ClaudeSession, HashEmbedder, PiSession, Project

from helpers import NOW, FixedClock
from memlane.engine.journal.echo import RECALL_PROMPT_PREFIX
from memlane.engine.project import Memory
from memlane.engine.sessions.ingest import DOCS_RULES_VERSION, META_DOCS_RULES
from memlane.engine.sessions.layer import SessionsLayer
from memlane.index.session_docs import BatchWrite, SessionDoc, StoredDoc

RECALL_PROMPT = (
    f"{RECALL_PROMPT_PREFIX} deploy approvals\n\nUse the recall skill: start with memory_search."
)
# What memlane answered: words that must not come back from the sessions index.
RECALLED = "production deploys need the release manager's approval (quokka)"


def layer_for(agent_project: Project, embedder: HashEmbedder | None = None) -> SessionsLayer:
    return SessionsLayer(Memory.open(agent_project.root, clock=FixedClock(NOW)), embedder=embedder)


def texts(docs: list[StoredDoc]) -> list[tuple[str, str, str]]:
    return [(d.role, d.part, d.text) for d in docs]


def _pi_recall_session() -> PiSession:
    session = PiSession()
    session.user(RECALL_PROMPT)
    session.entry(
        "custom_message",
        customType="memlane-context",
        content=f"<memory>{RECALLED}</memory>",
        display=False,
    )
    session.assistant(
        "Looking it up.",
        tool_calls=[("memory_search", {"query": "deploy approvals"}), ("bash", {"command": "ls"})],
    )
    session.tool_result(RECALLED, tool_name="memory_search", call_id="call_0")
    session.tool_result("deploy.sh README.md", tool_name="bash", call_id="call_1")
    session.assistant("Deploys need the release manager; deploy.sh is the script.")
    session.user("thanks, now run the zebrafish tests")
    return session


def test_pi_memlane_calls_results_and_recall_prompts_are_not_documents(
    agent_project: Project,
) -> None:
    path = _pi_recall_session().write(agent_project.pi_file())
    layer = layer_for(agent_project)
    layer.backfill()
    assert texts(layer.store.docs_of(str(path))) == [
        ("assistant", "", "Looking it up."),
        ("tool", "tool", 'bash({"command": "ls"})'),
        ("tool", "", "bash result: deploy.sh README.md"),
        ("assistant", "", "Deploys need the release manager; deploy.sh is the script."),
        ("user", "", "thanks, now run the zebrafish tests"),
    ]
    assert layer.search("quokka", mode="lexical").hits == []
    assert layer.search("recall skill", mode="lexical").hits == []


def _claude_recall_session(server: str = "memlane") -> ClaudeSession:
    claude = ClaudeSession("cc-1")
    claude.user("who approves production deploys?")
    claude.assistant(
        [
            {"type": "text", "text": "Checking memory."},
            {
                "type": "tool_use",
                "id": "toolu_mem",
                "name": f"mcp__{server}__memory_search",
                "input": {"query": "deploy approvals"},
            },
            {"type": "tool_use", "id": "toolu_ls", "name": "Bash", "input": {"command": "ls"}},
        ],
        msg_id="m1",
    )
    # Parallel calls: both results come back on one user line.
    claude.user(
        [
            {"tool_use_id": "toolu_mem", "type": "tool_result", "content": RECALLED},
            {"tool_use_id": "toolu_ls", "type": "tool_result", "content": "deploy.sh"},
        ]
    )
    claude.assistant(
        [
            {
                "type": "tool_use",
                "id": "toolu_exp",
                "name": "mcp__plugin_memlane_memlane__memory_expand",
                "input": {"chunk_hash": "0123abcd0123abcd"},
            }
        ],
        msg_id="m2",
    )
    claude.tool_result("toolu_exp", f"## 2026-11-30 10:00\n- {RECALLED}")
    claude.assistant([{"type": "text", "text": "The release manager approves."}], msg_id="m3")
    return claude


def test_claude_memlane_calls_and_results_are_not_documents(agent_project: Project) -> None:
    path = _claude_recall_session().write(agent_project.claude_file())
    layer = layer_for(agent_project)
    layer.backfill()
    assert texts(layer.store.docs_of(str(path))) == [
        ("user", "", "who approves production deploys?"),
        ("assistant", "", "Checking memory."),
        ("tool", "tool", 'Bash({"command": "ls"})'),
        ("tool", "", "tool result: deploy.sh"),
        ("assistant", "", "The release manager approves."),
    ]
    assert layer.search("quokka", mode="lexical").hits == []


def test_another_servers_memory_tools_stay_documents(agent_project: Project) -> None:
    path = _claude_recall_session(server="notes").write(agent_project.claude_file())
    layer = layer_for(agent_project)
    layer.backfill()
    stored = texts(layer.store.docs_of(str(path)))
    assert (
        "tool",
        "tool",
        'mcp__notes__memory_search({"query": "deploy approvals"})\nBash({"command": "ls"})',
    ) in stored
    assert any("quokka" in text and role == "tool" for role, _, text in stored)


def test_a_result_read_after_its_call_was_indexed_is_still_recognised(
    agent_project: Project,
) -> None:
    claude = ClaudeSession("cc-2")
    claude.user("who approves production deploys?")
    claude.assistant(
        [
            {
                "type": "tool_use",
                "id": "toolu_late",
                "name": "mcp__memlane__memory_search",
                "input": {"query": "deploy approvals"},
            }
        ],
        msg_id="m1",
    )
    path = claude.write(agent_project.claude_file())
    layer = layer_for(agent_project)
    layer.backfill()  # this pass ends between the call and its result
    claude.tool_result("toolu_late", RECALLED)
    claude.assistant([{"type": "text", "text": "The release manager approves."}], msg_id="m2")
    claude.write(path)
    assert layer.backfill().documents_added == 1
    assert texts(layer.store.docs_of(str(path)))[-1] == (
        "assistant",
        "",
        "The release manager approves.",
    )
    assert layer.search("quokka", mode="lexical").hits == []


def test_a_store_made_under_the_old_rules_loses_memlane_documents_once(
    agent_project: Project,
) -> None:
    path = _pi_recall_session().write(agent_project.pi_file())
    embedder = HashEmbedder()
    layer = layer_for(agent_project, embedder)
    layer.backfill()
    current = texts(layer.store.docs_of(str(path)))
    assert layer.store.meta()[META_DOCS_RULES] == DOCS_RULES_VERSION
    # What an earlier memlane stored for the same lines: the recall prompt,
    # memlane's call among the tool calls and memlane's result.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    user_id, call_id, result_id = lines[1]["id"], lines[3]["id"], lines[4]["id"]
    session_id = lines[0]["id"]

    def old(entry_id: str, role: str, text: str, part: str = "") -> SessionDoc:
        return SessionDoc(str(path), entry_id, session_id, role, None, text, role == "user", part)

    old_calls = old(
        call_id,
        "tool",
        'memory_search({"query": "deploy approvals"})\nbash({"command": "ls"})',
        "tool",
    )
    layer.store.remove_docs([old_calls.key])
    layer.store.commit(
        BatchWrite(
            docs=[
                old(user_id, "user", RECALL_PROMPT),
                old_calls,
                old(result_id, "tool", f"memory_search result: {RECALLED}"),
            ]
        )
    )
    layer.store.set_meta({META_DOCS_RULES: 0})
    assert len(layer.store.docs_of(str(path))) == len(current) + 2
    embedded = embedder.embedded

    # The next process to open the store finds it under the old rules.
    layer = layer_for(agent_project, embedder)
    report = layer.backfill()

    # (the rewritten tool-call document is stored anew, so it sorts last)
    assert sorted(texts(layer.store.docs_of(str(path)))) == sorted(current)
    # The recall prompt went; nothing that stayed was embedded again.
    assert report.embedded == 0 and embedder.embedded == embedded
    assert layer.store.meta()[META_DOCS_RULES] == DOCS_RULES_VERSION
    assert layer.backfill().files_read == 0  # once: the next pass has nothing to do


def test_a_transcript_without_memlane_messages_is_not_read_again(agent_project: Project) -> None:
    session = PiSession()
    session.user("run the zebrafish tests")
    session.assistant("3 passed")
    path: Path = session.write(agent_project.pi_file())
    layer = layer_for(agent_project)
    layer.backfill()
    layer.store.set_meta({META_DOCS_RULES: 0})
    assert layer_for(agent_project).backfill().files_read == 0
    assert layer.store.meta()[META_DOCS_RULES] == DOCS_RULES_VERSION
    assert len(layer.store.docs_of(str(path))) == 2
