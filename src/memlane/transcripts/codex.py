"""Codex CLI transcripts ("rollouts"): ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

``CODEX_HOME`` defaults to ``~/.codex``. Shapes, as Codex 0.171 writes them
(checked against the real binary, docs/codex.md):

- every line is ``{"timestamp" (iso), "ordinal"?, "type", "payload"}``;
- ``session_meta`` opens the file: ``payload.id`` is the session id,
  ``payload.cwd`` the directory the session started in;
- ``response_item`` lines are the conversation as sent to the model:
  ``payload.type`` ``message`` (``role`` user, assistant, developer or
  system; ``content`` blocks ``input_text``/``output_text``; ``id``), and
  ``function_call`` (``name``, ``arguments`` as a JSON string, ``call_id``),
  ``function_call_output`` (``call_id``, ``output``), ``custom_tool_call``
  and its output, ``reasoning`` (private, never read). An assistant reply
  that calls tools is several lines of one turn
  (``internal_chat_message_metadata_passthrough.turn_id``);
- user messages the harness writes (the environment context, AGENTS.md
  instructions, a turn aborted) are not prompts: they start with one of
  ``HARNESS_PREFIXES``, or their content kinds name no ``user.*`` kind;
  developer messages (instructions, hooks' additional context) are never
  conversation;
- ``compacted`` marks a compaction (``payload.message`` the summary);
- ``event_msg``, ``turn_context``, ``world_state``, ``token_usage_record``
  describe the session, not its conversation (``METADATA_TYPES``).

There are no parent links: a rollout is one linear conversation, each
entry the child of the one before it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memlane.transcripts import message as m
from memlane.transcripts import model
from memlane.transcripts.draft import Draft
from memlane.transcripts.tree import K_ASSISTANT, K_MARKER, K_SILENT, K_TOOL, K_USER, Index, Node

CODEX_HOME_ENV = "CODEX_HOME"
METADATA_TYPES = frozenset(
    {"session_meta", "event_msg", "turn_context", "world_state", "token_usage_record"}
)
TYPES = METADATA_TYPES | {"response_item", "compacted"}
HARNESS_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skill>",
    "<subagent_notification>",
)
TEXT_BLOCKS = frozenset({"input_text", "output_text", "text"})
TOOL_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
#: The first line (session_meta, with the base instructions) is read up to this.
META_LINE_BYTES = 1024 * 1024


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    raw = environ.get(CODEX_HOME_ENV)
    if raw:
        return Path(os.path.expanduser(raw))
    return Path(environ.get("HOME") or Path.home()) / ".codex"


def sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    return codex_home(env) / "sessions"


def _kind(obj: dict[str, Any]) -> str | None:
    value = obj.get("type")
    return value if isinstance(value, str) else None


def looks_like_codex(obj: dict[str, Any]) -> bool:
    return _kind(obj) in TYPES and isinstance(obj.get("payload"), dict)


def _payload(obj: dict[str, Any]) -> dict[str, Any]:
    payload = obj.get("payload")
    return payload if isinstance(payload, dict) else {}


def session_id_of(obj: dict[str, Any]) -> str | None:
    """The session id a ``session_meta`` line names, else None."""
    if obj.get("type") != "session_meta":
        return None
    payload = _payload(obj)
    for key in ("id", "session_id"):
        if isinstance(payload.get(key), str) and payload[key]:
            return str(payload[key])
    return None


#: The cwd each rollout's first line names, once read (a first line never changes):
#: every discovery of a project's sources would read every rollout's first line again.
_cwds: dict[str, str] = {}
_CWDS_MAX = 100_000


def meta_cwd(path: Path) -> str | None:
    """The cwd the rollout's ``session_meta`` names; None when unreadable or absent."""
    known = _cwds.get(str(path))
    if known is not None:
        return known
    found = _read_meta_cwd(path)
    if found is not None and len(_cwds) < _CWDS_MAX:
        _cwds[str(path)] = found
    return found


def _read_meta_cwd(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            line = handle.readline(META_LINE_BYTES)
        obj = json.loads(line)
    except (OSError, ValueError):
        return None
    if not isinstance(obj, dict) or obj.get("type") != "session_meta":
        return None
    cwd = _payload(obj).get("cwd")
    return cwd if isinstance(cwd, str) else None


def rollout_files(env: Mapping[str, str] | None = None) -> list[Path]:
    """Every rollout file under ``$CODEX_HOME/sessions`` (regular files only)."""
    root = sessions_dir(env)
    try:
        return sorted(
            p for p in root.glob("*/*/*/rollout-*.jsonl") if p.is_file() and not p.is_symlink()
        )
    except OSError:
        return []


def project_files(cwds: Iterable[str], env: Mapping[str, str] | None = None) -> list[Path]:
    """The rollouts whose session started in one of *cwds* (compared as given and resolved)."""
    wanted = set()
    for cwd in cwds:
        wanted.add(str(Path(cwd).absolute()))
        wanted.add(os.path.realpath(cwd))
    out = []
    for path in rollout_files(env):
        started = meta_cwd(path)
        if started is not None and (started in wanted or os.path.realpath(started) in wanted):
            out.append(path)
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        str(block["text"])
        for block in content
        if isinstance(block, dict)
        and str(block.get("type")) in TEXT_BLOCKS
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(p for p in parts if p)


def _turn_id(payload: dict[str, Any]) -> str | None:
    meta = payload.get("internal_chat_message_metadata_passthrough")
    turn = meta.get("turn_id") if isinstance(meta, dict) else None
    return turn if isinstance(turn, str) and turn else None


def is_prompt(payload: dict[str, Any]) -> bool:
    """Whether a user message is something the person typed (not harness context)."""
    text = _text(payload.get("content")).lstrip()
    if not text or text.startswith(HARNESS_PREFIXES):
        return False
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    if isinstance(kinds, list) and kinds:
        return any(isinstance(k, str) and k.startswith("user.") for k in kinds)
    return True


def entry_id(obj: dict[str, Any], order: int | None = None) -> str | None:
    """The id an entry is known by: the item's id, its call's, else its line number."""
    payload = _payload(obj)
    if isinstance(payload.get("id"), str) and payload["id"]:
        return str(payload["id"])
    call = payload.get("call_id")
    if isinstance(call, str) and call:
        return call + ("-output" if _kind(payload) in TOOL_OUTPUTS else "")
    ordinal = obj.get("ordinal")
    number = ordinal if isinstance(ordinal, int) else order
    return f"line-{number}" if number is not None else None


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"input": raw}
    return raw


def kind_of(obj: dict[str, Any]) -> str:
    """The tree kind of one line (K_SILENT for metadata and harness context)."""
    kind = _kind(obj)
    payload = _payload(obj)
    if kind == "compacted":
        return K_MARKER
    if kind != "response_item":
        return K_SILENT
    item = _kind(payload)
    if item == "message":
        role = payload.get("role")
        if role == "assistant":
            return K_ASSISTANT
        if role == "user" and is_prompt(payload):
            return K_USER
        return K_SILENT
    if item in TOOL_CALLS:
        return K_ASSISTANT
    if item in TOOL_OUTPUTS:
        return K_TOOL
    return K_SILENT


def message(obj: dict[str, Any]) -> m.Message | m.Skip:
    """One line as conversation, for reading a rollout message by message."""
    if _kind(obj) not in TYPES:
        return m.Skip.UNKNOWN
    found = kind_of(obj)
    if found == K_SILENT:
        return m.Skip.SILENT
    ident = entry_id(obj)
    if ident is None:
        return m.Skip.UNKNOWN
    payload = _payload(obj)
    stamps = (obj.get("timestamp"),)
    if found == K_MARKER:
        return m.Message(ident, m.SUMMARY, str(payload.get("message") or ""), stamps)
    item = _kind(payload)
    if found == K_USER:
        return m.Message(ident, m.USER, _text(payload.get("content")), stamps)
    if found == K_TOOL:
        output = payload.get("output")
        text = output if isinstance(output, str) else _text(output)
        if isinstance(output, dict):
            text = str(output.get("content") or "")
        call = payload.get("call_id")
        return m.Message(ident, m.TOOL, "", stamps, outputs=(m.ToolOutput(text, call),))
    if item in TOOL_CALLS:
        name = payload.get("name") or item
        namespace = payload.get("namespace")
        if isinstance(namespace, str) and namespace and isinstance(name, str):
            name = f"{namespace}__{name}"  # an MCP tool: mcp__<server>__<tool>
        args = _args(payload.get("arguments", payload.get("input", payload.get("action"))))
        return m.Message(ident, m.ASSISTANT, "", stamps, (m.ToolUse(name, args),))
    return m.Message(ident, m.ASSISTANT, _text(payload.get("content")), stamps)


class CodexIndexer:
    """Builds the tree index of a rollout: each entry the child of the one before."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.last: str | None = None

    def add(self, obj: dict[str, Any], order: int, offset: int) -> None:
        index = self.index
        kind_name = _kind(obj)
        if index.session_id is None and (sid := session_id_of(obj)) is not None:
            index.session_id = sid
            forked = _payload(obj).get("forked_from_id")
            index.parent_session = forked if isinstance(forked, str) else None
        if kind_name not in TYPES:
            index.unknown_types[str(kind_name)] += 1
            return
        if kind_name in METADATA_TYPES:
            return
        ident = entry_id(obj, order)
        if ident is None:
            index.missing_ids += 1
            return
        kind = kind_of(obj)
        group = _turn_id(_payload(obj)) if kind == K_ASSISTANT else None
        index.add(Node(ident, self.last, order, offset, kind, False, group))
        if ident in index.nodes and index.nodes[ident].order == order:
            self.last = ident


def draft(obj: dict[str, Any]) -> Draft:
    stamp = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    read = message(obj)
    if isinstance(read, m.Skip):
        payload = _payload(obj)
        label = payload.get("role") or payload.get("type") or obj.get("type")
        return Draft(model.EVENT, f"{label}: {_text(payload.get('content'))[:80]}", [], stamp, True)
    if read.role == m.SUMMARY:
        return Draft(model.COMPACTION, f"summary: {read.text}", [], stamp, True)
    if read.role == m.TOOL:
        return Draft(model.EVENT, "tool result", [], stamp, True)
    if read.role == m.USER:
        return Draft(model.USER, read.text, timestamp=stamp)
    calls = [
        (str(c.name or "?"), c.args if isinstance(c.args, dict) else {"input": c.args})
        for c in read.calls
    ]
    return Draft(model.ASSISTANT, read.text, calls, stamp)
