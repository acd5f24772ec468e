"""Claude Code transcripts: ``~/.claude/projects/<encoded cwd>/<session>.jsonl``.

Shapes (from transcripts as public tools document them; Claude Code
publishes no schema):

- conversation lines ``{"type": "user"|"assistant"|"system", "uuid",
  "parentUuid" (null at a root), "isSidechain", "sessionId", "timestamp"
  (iso), "message": {"role", "content"}}``; ``content`` is a string or blocks
  (text, thinking, redacted_thinking, tool_use {name, input}, tool_result,
  image); one API reply is written as several assistant lines sharing
  ``message.id``;
- tool results come back as user lines whose content is tool_result blocks;
  ``isMeta`` user lines are harness chatter (caveats, hook feedback); a slash
  command is a user line of tags, read as ``/name args``, and a local
  command's output a user line the harness wrote (claude_commands.py);
- compaction writes ``{"type":"system","subtype":"compact_boundary",
  "parentUuid":null,"logicalParentUuid":<previous uuid>,"compactMetadata"}``
  then a user line with ``isCompactSummary: true`` holding the summary; the
  pre-compaction turns stay in the file, reached through logicalParentUuid;
- ``isSidechain: true`` lines are a subagent's conversation, not the main one;
- ``attachment`` lines (2.1.x) sit in the uuid chain between a prompt and
  its reply: context the harness added (environment, date, hook output),
  and a prompt typed while the agent worked (``queued_command``: a user
  turn, with no user line of its own);
- metadata lines without a uuid: ``summary`` (``leafUuid``),
  ``file-history-snapshot``, ``queue-operation``, titles, and from 2.1.x
  ``api-request*`` (the requests as sent), ``tools-used``, ``cost-state``,
  latches and modes (``METADATA_TYPES`` lists them). They are skipped
  silently; a type outside these lists is counted as unknown.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from memlane.transcripts import message as m
from memlane.transcripts import model
from memlane.transcripts.claude_commands import is_command_output, typed_command
from memlane.transcripts.draft import Draft, text_of_blocks, text_with_results
from memlane.transcripts.tree import (
    K_ASSISTANT,
    K_MARKER,
    K_SILENT,
    K_TOOL,
    K_USER,
    Index,
    Node,
)

CONVERSATION_TYPES = frozenset({"user", "assistant", "system"})
# Types that may carry a uuid and sit in the chain without being conversation:
# an attachment is context the harness added to the turn (environment, date,
# hook output, file snapshots...), a progress line a tool's progress.
CHAIN_TYPES = frozenset({"attachment", "progress"})
# Lines without a uuid that describe the session, not its conversation. The
# list is the one Claude Code 2.1.x itself knows when it reads a transcript
# back (its resume code names each type and what to do with it).
METADATA_TYPES = frozenset(
    {
        # titles, tags, links
        "summary",
        "custom-title",
        "ai-title",
        "tag",
        "agent-name",
        "agent-color",
        "agent-setting",
        "pr-link",
        "frame-link",
        "continued-in",
        "derived-from",
        "ended-by-model",
        "relocated",
        "last-prompt",
        # the prompt queue, the API requests as sent, and what they cost
        "queue-operation",
        "api-request",
        "api-request-resumed",
        "api-request-shape",
        "api-request-blob",
        "cost-state",
        "tools-used",
        "content-replacement",
        "fork-context-ref",
        "observer-ref",
        "resume-head-vouch",
        "history-suppression",
        # file history and attribution
        "file-history-snapshot",
        "file-history-delta",
        "attribution-snapshot",
        # modes, latches and ownership of the session
        "mode",
        "permission-mode",
        "memory-mode",
        "repl-mode",
        "isolation-latch",
        "atis-latch",
        "session-owner",
        "dev-mods",
        "worktree-state",
        "bridge-session",
        "hybrid-organization",
        "host-row",
        "data-flow-records",
        "data-flow-incomplete",
        "artifact-comment-monitor",
        "artifact-autoreact-ledger",
    }
)


def queued_prompt(obj: dict[str, Any]) -> str | None:
    """The words of a prompt the person typed while the agent worked, or None.

    2.1.x folds such a prompt into the running turn as a ``queued_command``
    attachment and writes no user line for it. Only the person's own prompt
    counts: not a slash command's or a task's notification (``commandMode``),
    another session's message (``origin.kind``), nor harness chatter
    (``isMeta``).
    """
    if obj.get("type") != "attachment":
        return None
    attachment = obj.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    if attachment.get("isMeta") or attachment.get("commandMode", "prompt") != "prompt":
        return None
    origin = attachment.get("origin")
    if isinstance(origin, dict) and origin.get("kind", "human") != "human":
        return None
    text = text_of_blocks(attachment.get("prompt"))
    return text if text.strip() else None


# Known lines that are never conversation.
_SILENT_TYPES = METADATA_TYPES | CHAIN_TYPES | {"system"}


def looks_like_claude(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if kind in CONVERSATION_TYPES:
        return isinstance(obj.get("uuid"), str) or isinstance(obj.get("message"), dict)
    return kind in METADATA_TYPES or kind in CHAIN_TYPES


class ClaudeIndexer:
    def __init__(self, index: Index) -> None:
        self.index = index

    def add(self, obj: dict[str, Any], order: int, offset: int) -> None:
        index = self.index
        kind_name = obj.get("type")
        uuid = obj.get("uuid")
        if index.session_id is None and isinstance(obj.get("sessionId"), str):
            index.session_id = obj["sessionId"]
        if not isinstance(uuid, str) or not uuid:
            if kind_name in CONVERSATION_TYPES:
                index.missing_ids += 1
            elif kind_name not in METADATA_TYPES and kind_name not in CHAIN_TYPES:
                index.unknown_types[str(kind_name)] += 1
            return
        parent = obj.get("parentUuid")
        if not isinstance(parent, str) or not parent:
            # A compact boundary starts a new root but names the turn it
            # follows, and the turns before it are still in the file.
            logical = obj.get("logicalParentUuid")
            parent = logical if isinstance(logical, str) and logical else None
        group: str | None = None
        if kind_name == "user":
            kind = _user_kind(obj)
        elif kind_name == "assistant":
            kind = K_ASSISTANT
            message = obj.get("message")
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                group = message["id"]
        elif kind_name == "system":
            kind = K_MARKER if obj.get("subtype") == "compact_boundary" else K_SILENT
        elif kind_name == "attachment" and queued_prompt(obj) is not None:
            kind = K_USER
        else:
            if kind_name not in CHAIN_TYPES:
                index.unknown_types[str(kind_name)] += 1
            kind = K_SILENT
        index.add(Node(uuid, parent, order, offset, kind, bool(obj.get("isSidechain")), group))


def _user_kind(obj: dict[str, Any]) -> str:
    if obj.get("isCompactSummary"):
        return K_MARKER
    if obj.get("isMeta"):
        return K_SILENT
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if _is_tool_results(content):
        return K_TOOL
    # A local command's printed output is the harness talking.
    return K_SILENT if is_command_output(text_of_blocks(content)) else K_USER


def message(obj: dict[str, Any]) -> m.Message | m.Skip:
    """One line as conversation, for reading a transcript message by message.

    Sidechain lines are messages too (``Message.sidechain`` says so); meta
    lines (harness chatter) are silent.
    """
    kind = obj.get("type")
    uuid = obj.get("uuid")
    if kind == "attachment":
        prompt = queued_prompt(obj)
        if prompt is None or not isinstance(uuid, str) or not uuid:
            return m.Skip.SILENT
        stamps: tuple[object, ...] = (obj.get("timestamp"),)
        return m.Message(uuid, m.USER, prompt, stamps, sidechain=bool(obj.get("isSidechain")))
    if kind not in ("user", "assistant"):
        return m.Skip.SILENT if kind in _SILENT_TYPES else m.Skip.UNKNOWN
    if not isinstance(uuid, str) or not uuid:
        return m.Skip.UNKNOWN
    raw = obj.get("message")
    content = raw.get("content") if isinstance(raw, dict) else None
    stamps = (obj.get("timestamp"),)
    sidechain = bool(obj.get("isSidechain"))
    if kind == "assistant":
        calls = tuple(
            m.ToolUse(block.get("name"), block.get("input"))
            for block in content or []
            if isinstance(block, dict) and block.get("type") == "tool_use"
        )
        text = text_of_blocks(content)
        return m.Message(uuid, m.ASSISTANT, text, stamps, calls, sidechain=sidechain)
    if obj.get("isCompactSummary"):
        return m.Message(uuid, m.SUMMARY, text_of_blocks(content), stamps, sidechain=sidechain)
    if obj.get("isMeta"):
        return m.Skip.SILENT
    if _is_tool_results(content):
        outputs = tuple(
            m.ToolOutput(text_with_results(block.get("content")), block.get("tool_use_id"))
            for block in content
            if isinstance(block, dict)
        )
        return m.Message(uuid, m.TOOL, "", stamps, outputs=outputs, sidechain=sidechain)
    text = text_of_blocks(content)
    if is_command_output(text):
        return m.Skip.SILENT
    text = typed_command(text) or text
    return m.Message(uuid, m.USER, text, stamps, sidechain=sidechain)


def _is_tool_results(content: Any) -> TypeGuard[list[Any]]:
    """Whether a user line's content is tool results only (the harness's reply)."""
    if not isinstance(content, list) or not content:
        return False
    return {block.get("type") for block in content if isinstance(block, dict)} == {"tool_result"}


def draft(obj: dict[str, Any]) -> Draft:
    kind_name = obj.get("type")
    stamp = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    raw = obj.get("message")
    message: dict[str, Any] = raw if isinstance(raw, dict) else {}
    content = message.get("content")
    if kind_name == "user":
        if obj.get("isCompactSummary"):
            return Draft(model.COMPACTION, f"summary: {text_of_blocks(content)}", [], stamp, True)
        if _user_kind(obj) == K_TOOL:
            return Draft(model.EVENT, "tool result", [], stamp, True)
        if obj.get("isMeta"):
            return Draft(model.EVENT, f"meta: {text_of_blocks(content)}", [], stamp, True)
        text = text_of_blocks(content)
        if is_command_output(text):
            return Draft(model.EVENT, f"command output: {text.strip()}", [], stamp, True)
        return Draft(model.USER, typed_command(text) or text, timestamp=stamp)
    if kind_name == "attachment" and (prompt := queued_prompt(obj)) is not None:
        return Draft(model.USER, prompt, timestamp=stamp)
    if kind_name == "assistant":
        calls = [
            (str(block.get("name") or "?"), _args(block.get("input")))
            for block in content or []
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]
        return Draft(model.ASSISTANT, text_of_blocks(content), calls, stamp)
    if kind_name == "system" and obj.get("subtype") == "compact_boundary":
        meta = obj.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        detail = ", ".join(
            str(part)
            for part in (
                meta.get("trigger"),
                f"{meta['preTokens']} tokens before" if meta.get("preTokens") else None,
            )
            if part
        )
        text = f"conversation compacted ({detail})" if detail else "conversation compacted"
        return Draft(model.COMPACTION, text, [], stamp, True)
    body = obj.get("content") if isinstance(obj.get("content"), str) else obj.get("subtype")
    return Draft(model.EVENT, f"{kind_name}: {body or json.dumps(obj)[:80]}", [], stamp, True)


def _args(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
