"""Hand-written transcript builders in the shapes pi and Claude Code write.

pi: header + entries as in pi-coding-agent's docs/session-format.md (v3).
Claude Code: uuid/parentUuid lines, split assistant replies sharing
message.id, tool_result user lines, compact_boundary + isCompactSummary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 8, 13, 14, 0, tzinfo=UTC)
_UNSET: Any = object()


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class PiSession:
    """Builds a pi session file the way SessionManager appends to it."""

    def __init__(
        self, session_id: str = "019a2b3c-sess", parent_session: str | None = None
    ) -> None:
        header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": iso(START),
            "cwd": "/home/you/project",
        }
        if parent_session:
            header["parentSession"] = parent_session
        self.lines: list[str] = [json.dumps(header)]
        self.leaf: str | None = None
        self.count = 0
        self.clock = START

    def entry(
        self, kind: str, /, entry_id: str | None = None, parent: Any = _UNSET, **fields: Any
    ) -> str:
        self.count += 1
        entry_id = entry_id or f"e{self.count:07x}"
        self.clock += timedelta(minutes=1)
        obj = {
            "type": kind,
            "id": entry_id,
            "parentId": self.leaf if parent is _UNSET else parent,
            "timestamp": iso(self.clock),
            **fields,
        }
        self.lines.append(json.dumps(obj))
        self.leaf = entry_id
        return entry_id

    def user(
        self, text: str | list[dict[str, Any]], entry_id: str | None = None, parent: Any = _UNSET
    ) -> str:
        message = {"role": "user", "content": text, "timestamp": 0}
        return self.entry("message", entry_id, parent, message=message)

    def assistant(
        self,
        text: str = "",
        entry_id: str | None = None,
        parent: Any = _UNSET,
        *,
        tool_calls: Sequence[tuple[str, dict[str, Any]]] = (),
        thinking: str | None = None,
    ) -> str:
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        for i, (name, args) in enumerate(tool_calls):
            content.append({"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": args})
        message = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": "toolUse" if tool_calls else "stop",
            "timestamp": 0,
        }
        return self.entry("message", entry_id, parent, message=message)

    def tool_result(
        self,
        text: str,
        entry_id: str | None = None,
        parent: Any = _UNSET,
        *,
        tool_name: str = "bash",
        call_id: str = "call_0",
    ) -> str:
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool_name,
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 0,
        }
        return self.entry("message", entry_id, parent, message=message)

    def compaction(self, summary: str, first_kept: str, entry_id: str | None = None) -> str:
        return self.entry(
            "compaction", entry_id, summary=summary, firstKeptEntryId=first_kept, tokensBefore=50000
        )

    def branch_summary(self, from_id: str, summary: str, parent: str) -> str:
        return self.entry("branch_summary", None, parent, fromId=from_id, summary=summary)

    def model_change(self) -> str:
        return self.entry("model_change", provider="openai", modelId="gpt-4o")

    def system(self, sections: dict[str, str | None], tools: Sequence[str] = ()) -> str:
        """pi 1.6's system message: prompt sections and the tools it adds."""
        message: dict[str, Any] = {"role": "system", "content": "", "sections": sections}
        if tools:
            message["toolsAdded"] = [
                {"name": n, "description": "", "parameters": {}} for n in tools
            ]
        message["timestamp"] = 0
        return self.entry("message", message=message)

    def usage(self, kind: str = "cache_warm") -> str:
        """pi 1.6's usage entry (outside the conversation)."""
        usage = {"input": 0, "output": 0, "cacheRead": 50000, "cacheWrite": 0, "totalTokens": 50000}
        fields = {"kind": kind, "provider": "anthropic", "model": "claude-sonnet-4-5"}
        return self.entry("usage", **fields, usage=usage)

    def context_edit(self, target: str, replacement: dict[str, Any] | None = None) -> str:
        """pi 1.6's context_edit: a later edit of what the model is sent."""
        return self.entry("context_edit", targetId=target, replacement=replacement)

    def branch(self, entry_id: str | None) -> None:
        """/tree navigation: the leaf moves; nothing is written."""
        self.leaf = entry_id

    def raw(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def write(self, path: Path) -> Path:
        path.write_text(self.text(), encoding="utf-8")
        return path


class ClaudeSession:
    """Builds a Claude Code transcript (~/.claude/projects/<cwd>/<id>.jsonl)."""

    def __init__(self, session_id: str = "5d9c0e7a-1111-4222-8333-944455556666") -> None:
        self.session_id = session_id
        self.lines: list[str] = []
        self.leaf: str | None = None
        self.count = 0
        self.clock = START

    def line(
        self,
        kind: str,
        uuid: str | None = None,
        parent: Any = _UNSET,
        *,
        sidechain: bool = False,
        advance: bool = True,
        **fields: Any,
    ) -> str:
        self.count += 1
        uuid = uuid or f"c{self.count:07d}-0000-4000-8000-000000000000"
        self.clock += timedelta(minutes=1)
        obj = {
            "parentUuid": self.leaf if parent is _UNSET else parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": "/home/you/project",
            "sessionId": self.session_id,
            "version": "2.1.12",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": iso(self.clock),
            **fields,
        }
        self.lines.append(json.dumps(obj))
        if advance:
            self.leaf = uuid
        return uuid

    def user(self, content: str | list[dict[str, Any]], uuid: str | None = None, **kw: Any) -> str:
        return self.line("user", uuid, message={"role": "user", "content": content}, **kw)

    def assistant(
        self,
        blocks: list[dict[str, Any]],
        msg_id: str = "msg_01",
        uuid: str | None = None,
        **kw: Any,
    ) -> str:
        message = {
            "model": "claude-opus-4-5-20251101",
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return self.line("assistant", uuid, message=message, requestId="req_1", **kw)

    def tool_result(self, tool_use_id: str, text: str, **kw: Any) -> str:
        content = [{"tool_use_id": tool_use_id, "type": "tool_result", "content": text}]
        return self.line(
            "user",
            None,
            message={"role": "user", "content": content},
            toolUseResult={"stdout": text},
            **kw,
        )

    def compact(self, summary: str) -> tuple[str, str]:
        previous = self.leaf
        boundary = self.line(
            "system",
            None,
            None,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid=previous,
            compactMetadata={"trigger": "auto", "preTokens": 155025},
            level="info",
            isMeta=False,
        )
        text = "This session is being continued from a previous conversation. " + summary
        summary_id = self.user(text, isCompactSummary=True, isVisibleInTranscriptOnly=True)
        return boundary, summary_id

    def metadata(self, obj: dict[str, Any]) -> None:
        self.lines.append(json.dumps(obj))

    # -- 2.1.x shapes (as the real 2.1.332 writes them) ---------------------------------

    def attachment(self, kind: str, text: str = "", **payload: Any) -> str:
        """Context the harness adds to a turn: a uuid line in the chain, no message."""
        rendered = [{"content": f"<system-reminder>\n{text or kind}\n</system-reminder>"}]
        return self.line(
            "attachment",
            attachment={"type": kind, **payload},
            rendered=rendered,
            renderedRole="system",
            entrypoint="sdk-cli",
        )

    def queued(self, prompt: str, **attachment: Any) -> str:
        """A prompt typed while the agent worked: 2.1.x folds it into the turn as
        a queued_command attachment (no user line), then drops it from the queue."""
        uuid = self.line(
            "attachment",
            attachment={
                "type": "queued_command",
                "prompt": prompt,
                "commandMode": "prompt",
                "origin": {"kind": "human"},
                **attachment,
            },
        )
        self.record("queue-operation", operation="remove", reason="absorbed_mid_turn")
        return uuid

    def command_21(self, name: str, args: str = "", output: str | None = None) -> str:
        """A slash command as 2.1.x writes it: the tags line (the person's words)
        and, for a local command, its printed output as another user line."""
        typed = self.user(
            f"<command-name>/{name}</command-name>\n"
            f"            <command-message>{name}</command-message>\n"
            f"            <command-args>{args}</command-args>"
        )
        if output is not None:
            self.user(f"<local-command-stdout>{output}</local-command-stdout>")
        return typed

    def shell_21(self, command: str, stdout: str = "", stderr: str = "") -> str:
        """A ``!cmd`` shell line as 2.1.x writes it: the input tag line (the
        person's words), then stdout and stderr together in one user line."""
        typed = self.user(f"<bash-input>{command}</bash-input>")
        self.user(f"<bash-stdout>{stdout}</bash-stdout><bash-stderr>{stderr}</bash-stderr>")
        return typed

    def record(self, kind: str, **fields: Any) -> None:
        """A line about the session, not in the chain (no uuid)."""
        self.lines.append(json.dumps({"type": kind, "sessionId": self.session_id, **fields}))

    def session_start_21(self, context: str, status: str = "memory on") -> str:
        """What a SessionStart hook leaves before the first prompt: the queued
        prompt records, then its attachments as the root of the chain."""
        self.record("queue-operation", operation="enqueue", timestamp=iso(self.clock))
        self.record("queue-operation", operation="dequeue", timestamp=iso(self.clock))
        self.leaf = None
        hook = {
            "hookName": "SessionStart",
            "toolUseID": "SessionStart",
            "hookEvent": "SessionStart",
        }
        self.attachment("hook_success", "SessionStart hook success", **hook)
        self.attachment("hook_system_message", status, content=status, **hook)
        return self.attachment(
            "hook_additional_context",
            f"SessionStart hook additional context: {context}",
            content=[context],
            **hook,
        )

    def turn_21(
        self, prompt: str, reply: str, msg_id: str = "msg_21", *, context: str | None = None
    ) -> tuple[str, str]:
        """One prompt and its reply the way 2.1.x writes them: the queued prompt,
        the user line, attachments chained after it, the API request records,
        the assistant line (its parent the last attachment), then the
        last-prompt and cost records. Returns the user and assistant uuids."""
        stamp = iso(self.clock)
        self.record("queue-operation", operation="enqueue", timestamp=stamp, content=prompt)
        self.record("queue-operation", operation="dequeue", timestamp=stamp)
        user = self.user(prompt, promptId="p-1", permissionMode="default")
        if context is not None:  # a UserPromptSubmit hook's additionalContext
            self.attachment(
                "hook_additional_context",
                f"UserPromptSubmit hook additional context: {context}",
                content=[context],
                hookName="UserPromptSubmit",
                hookEvent="UserPromptSubmit",
            )
        self.attachment("environment", "# Environment", snapshot={"platform": "linux"})
        self.attachment("date", "Today's date is 2026-08-13.", date="2026-08-13")
        self.record("atis-latch", atis="on")
        self.attachment("prompt_snapshot", prompt=prompt)
        self.record("api-request-shape", shape={"model": "x"}, shapeHash="h1", timestamp=stamp)
        self.record("api-request-blob", hash="b1", message={"role": "user", "content": prompt})
        self.record("api-request", id="r1", params={}, shapeHash="h1", timestamp=stamp)
        self.record("tools-used", tools=["Read"])
        answer = self.assistant([{"type": "text", "text": reply}], msg_id=msg_id)
        self.record("last-prompt", lastPrompt=prompt, leafUuid=answer)
        self.record("cost-state", totalCostUSD=0.001, modelUsage={}, totalDuration=12)
        return user, answer

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def write(self, path: Path) -> Path:
        path.write_text(self.text(), encoding="utf-8")
        return path
