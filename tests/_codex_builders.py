"""Hand-written Codex rollouts in the shapes Codex 0.171 writes (checked against the real binary).

``CodexRollout`` appends lines the way Codex does: ``session_meta`` first,
then per turn the harness's context (a developer message, the environment
context as a user message), the prompt (a user message whose content kinds
say ``user.text``), a hook's additional context (developer), function calls
and their outputs, the assistant's message, and the event lines around them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STAMP = "2026-08-13T14:00:00.000Z"


class CodexRollout:
    def __init__(self, session_id: str = "01a2b3c4-sess", cwd: str = "/home/you/project") -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.ordinal = 0
        self.lines: list[str] = []
        self.turn = 0
        self.add(
            "session_meta",
            {"id": session_id, "session_id": session_id, "cwd": cwd, "cli_version": "0.171.0"},
        )

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        line = {"timestamp": STAMP, "ordinal": self.ordinal, "type": kind, "payload": payload}
        self.ordinal += 1
        self.lines.append(json.dumps(line))

    def _meta(self, kinds: list[str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"turn_id": self.turn_id}
        if kinds is not None:
            meta["content_item_kinds"] = kinds
        return meta

    @property
    def turn_id(self) -> str:
        return f"turn-{self.turn}"

    def message(self, role: str, text: str, ident: str, kinds: list[str] | None = None) -> str:
        block = "output_text" if role == "assistant" else "input_text"
        self.add(
            "response_item",
            {
                "type": "message",
                "id": ident,
                "role": role,
                "content": [{"type": block, "text": text}],
                "internal_chat_message_metadata_passthrough": self._meta(kinds),
            },
        )
        return ident

    def prompt(self, text: str) -> str:
        """A new turn: its event, the harness context, then the person's prompt."""
        self.turn += 1
        self.add("event_msg", {"type": "task_started", "turn_id": self.turn_id})
        self.add("turn_context", {"turn_id": self.turn_id, "cwd": self.cwd})
        self.message(
            "user",
            "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>",
            f"env-{self.turn}",
        )
        ident = self.message("user", text, f"msg-user-{self.turn}", ["user.text"])
        self.message(
            "developer",
            "## Project memory (memlane)\nhook context",
            f"dev-{self.turn}",
            ["hooks.additional_context"],
        )
        return ident

    def call(
        self, name: str, arguments: dict[str, Any], output: str, namespace: str | None = None
    ) -> str:
        call_id = f"call-{self.ordinal}"
        payload: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc-{self.ordinal}",
            "name": name,
            "arguments": json.dumps(arguments),
            "call_id": call_id,
            "internal_chat_message_metadata_passthrough": self._meta(),
        }
        if namespace:
            payload["namespace"] = namespace
        self.add("response_item", payload)
        self.add(
            "response_item",
            {
                "type": "function_call_output",
                "id": f"fco-{self.ordinal}",
                "call_id": call_id,
                "output": output,
            },
        )
        return call_id

    def answer(self, text: str) -> str:
        ident = self.message("assistant", text, f"msg-answer-{self.turn}")
        self.add(
            "event_msg",
            {"type": "task_complete", "turn_id": self.turn_id, "last_agent_message": text},
        )
        return ident

    def compacted(self, summary: str) -> None:
        self.add("compacted", {"message": summary, "replacement_history": []})

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text(), encoding="utf-8")
        return path
