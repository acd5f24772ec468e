"""tests/fake_anthropic.py answers as the Messages API does: what the Claude Code e2e tests rest on."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from fake_anthropic import COMPACT_MARKER, FakeClaude, Request, ToolUse, Turn
from memlane.llm.anthropic import AnthropicLLM

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def post(model: FakeClaude, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        model.base_url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def events(raw: bytes) -> list[dict[str, Any]]:
    found = []
    for block in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            data = json.loads(lines["data"])
            assert data["type"] == lines["event"]
            found.append(data)
    return found


def agent_body(stream: bool, text: str = "hi") -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }


def test_memlanes_own_anthropic_provider_reads_a_side_answer() -> None:
    with FakeClaude(side=lambda r: f"- distilled: {r.prompt}") as model:
        llm = AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-fake", base_url=model.base_url)
        assert llm.complete("Distil.", "the exchange") == "- distilled: the exchange"
        (request,) = model.side_requests
        assert request.system == "Distil." and model.agent_requests == []


def test_a_streamed_tool_call_reassembles_and_stops_for_the_tool() -> None:
    with FakeClaude() as model:
        model.agent(Turn("Looking.", (ToolUse("Bash", {"command": "ls -la"}),)))
        ctype, raw = post(model, "/v1/messages?beta=true", agent_body(True))
    assert ctype == "text/event-stream"
    got = events(raw)
    assert got[0]["type"] == "message_start"
    assert got[-1]["type"] == "message_stop"
    texts = "".join(
        e["delta"]["text"] for e in got if e.get("delta", {}).get("type") == "text_delta"
    )
    assert texts == "Looking."
    pieces = [
        e["delta"]["partial_json"]
        for e in got
        if e.get("delta", {}).get("type") == "input_json_delta"
    ]
    assert len(pieces) == 2 and json.loads("".join(pieces)) == {"command": "ls -la"}
    starts = [e["content_block"] for e in got if e["type"] == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"] and starts[1]["name"] == "Bash"
    (delta,) = [e for e in got if e["type"] == "message_delta"]
    assert delta["delta"]["stop_reason"] == "tool_use"


def test_json_answers_tool_results_and_counts() -> None:
    with FakeClaude(default_text="Fallback.") as model:
        model.agent(Turn.call("Bash", command="pwd"))
        _, raw = post(model, "/v1/messages", agent_body(False))
        answer = json.loads(raw)
        assert answer["stop_reason"] == "tool_use"
        use = answer["content"][0]
        follow = agent_body(False)
        follow["messages"] += [
            {"role": "assistant", "content": [use]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "/tmp"}],
            },
        ]
        _, raw = post(model, "/v1/messages", follow)
        assert json.loads(raw)["content"] == [{"type": "text", "text": "Fallback."}]
        last: Request = model.agent_requests[-1]
        assert [(r.name, r.text, r.is_error) for r in last.tool_results] == [
            ("Bash", "/tmp", False)
        ]
        assert last.prompt == "hi"
        _, raw = post(model, "/v1/messages/count_tokens", agent_body(False))
        assert json.loads(raw)["input_tokens"] > 0 and len(model.count_requests) == 1


def test_a_compaction_is_answered_apart_from_the_agent_queue() -> None:
    with FakeClaude(compact_summary="Summary.") as model:
        model.agent(Turn.say("queued"))
        _, raw = post(model, "/v1/messages", agent_body(False, f"CRITICAL: {COMPACT_MARKER}."))
        assert json.loads(raw)["content"][0]["text"] == "Summary."
        assert model.pending() == 1 and len(model.compact_requests) == 1
        big = Turn("full", input_tokens=990_000)
        model.clear()
        model.agent(big)
        _, raw = post(model, "/v1/messages", agent_body(False))
        assert json.loads(raw)["usage"]["input_tokens"] == 990_000
