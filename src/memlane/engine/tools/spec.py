"""What the agent tools are: their names, descriptions and arguments.

A leaf: it imports nothing from the engine, so anything (the tool catalog,
the topic tool in engine/topics/ops.py, the echo filter, a host listing its
tools) can read a spec without pulling in what the tools do. The MCP tool
list and pi's declarations are generated from these, and ``check_arguments``
gives a bad call the same clear error on every host.
"""

from __future__ import annotations

from collections.abc import Mapping

from memlane.core.errors import MemlaneError
from memlane.core.topic_types import TOPIC_TYPES

# ``typing`` and ``dataclasses`` stay unimported: ``memlane mcp`` lists the tools
# from this module before anything else, and those two alone would double its start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RECALL_LADDER = (
    "Recall works in three steps; stop at the first that answers: memory_search (L1, "
    "best-matching notes with chunk hashes) → memory_expand (L2, the whole section and "
    "its session anchor) → memory_transcript (L3, the original conversation)."
)


class _Value:
    """Compared, hashed and shown by its fields (``__slots__``), set once in
    ``__init__``: what a frozen dataclass gives."""

    __slots__: tuple[str, ...] = ()
    #: Fields left out of the hash (unhashable values).
    _unhashed: tuple[str, ...] = ()

    def _set(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: cannot set {name}")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _Value)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.__slots__ if n not in self._unhashed))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"


class Param(_Value):
    """One argument of a tool; ``type`` is its JSON schema type (string, integer,
    number, boolean)."""

    __slots__ = ("description", "enum", "maximum", "minimum", "name", "required", "type")
    name: str
    type: str
    description: str
    required: bool
    enum: tuple[str, ...]
    minimum: int | None
    maximum: int | None

    def __init__(
        self,
        name: str,
        type: str,
        description: str,
        required: bool = False,
        enum: tuple[str, ...] = (),
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> None:
        self._set(
            name=name,
            type=type,
            description=description,
            required=required,
            enum=enum,
            minimum=minimum,
            maximum=maximum,
        )


class ToolSpec(_Value):
    """One agent tool: what it is called, what it does, its arguments and its effect.

    ``title`` is the short name a host shows a person. The effect flags are
    what MCP calls tool annotations: ``read_only`` (changes no memory; a
    search may still bring the derived index up to date), ``destructive``
    (can remove what was stored) and ``idempotent`` (calling it again with
    the same arguments changes nothing more). Every tool works on this
    machine's memory only, never the open world.

    ``rule``: root keywords for a rule between arguments (which ones go
    together). Never a root oneOf/anyOf/allOf: Claude Code rewrites such a
    schema to a bare object before the model sees it (required and all), and
    the Messages API refuses one; nested inside other keywords they pass.
    """

    __slots__ = (
        "description",
        "destructive",
        "idempotent",
        "name",
        "params",
        "read_only",
        "rule",
        "title",
    )
    _unhashed = ("rule",)
    name: str
    description: str
    params: tuple[Param, ...]
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    rule: Mapping[str, Any]

    def __init__(
        self,
        name: str,
        description: str,
        params: tuple[Param, ...],
        title: str = "",
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
        rule: Mapping[str, Any] | None = None,
    ) -> None:
        self._set(
            name=name,
            description=description,
            params=params,
            title=title,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            rule=rule if rule is not None else {},
        )

    def json_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.type, "description": p.description}
            if p.enum:
                prop["enum"] = list(p.enum)
            if p.minimum is not None:
                prop["minimum"] = p.minimum
            if p.maximum is not None:
                prop["maximum"] = p.maximum
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
            **self.rule,
        }


class ToolResult(_Value):
    """What a tool answers: ``text`` for the agent, ``details`` the same facts as data."""

    __slots__ = ("details", "text")
    _unhashed = ("details",)
    text: str
    details: dict[str, Any]

    def __init__(self, text: str, details: dict[str, Any]) -> None:
        self._set(text=text, details=details)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "details": self.details}


_QUERY = Param("query", "string", "What to look for, in plain words.", required=True)
_PROJECT = Param(
    "project",
    "string",
    "The origin project of a cross-repo hit (its label, verbatim); omit for this project.",
)

MEMORY_WRITE_SPEC = ToolSpec(
    "memory_write",
    "Save a memory now: a decision, a fact, a preference or a follow-up worth keeping "
    "beyond this session. Appended, timestamped and anchored to this conversation in "
    "today's daily memory file. Write standalone sentences; secrets are redacted.",
    (
        Param("text", "string", "The memory, one or more lines.", required=True),
        Param(
            "supersedes",
            "string",
            "The chunk hash (from memory_search) of an earlier memory this one corrects or "
            "replaces: searches then show this one first and mark the old one outdated.",
        ),
    ),
    title="Save a memory",
)

MEMORY_SEARCH_SPEC = ToolSpec(
    "memory_search",
    "L1 recall: the best-matching memory chunks for a query, each with a score, a "
    "confidence band (strong: very likely what you asked; possible: related; weak: a "
    "distant candidate to check), its date and a chunk hash. Start here. A hit marked "
    "OUTDATED (superseded_by) was replaced by a newer memory: prefer the newer one. Hits "
    "below min_score are left out, and an empty result means nothing relevant is "
    "stored. " + RECALL_LADDER,
    (
        _QUERY,
        Param(
            "k",
            "integer",
            "How many hits (default 5; 10 for kind session).",
            minimum=1,
            maximum=100,
        ),
        Param(
            "scope",
            "string",
            '"project" (default) or "all" to search every project under the scan roots.',
            enum=("project", "all"),
        ),
        Param(
            "kind",
            "string",
            "journal (notes), topic (curated topics), session (every past message of "
            "this project's agent sessions) or all; default: journal and topics.",
            enum=("journal", "topic", "session", "all"),
        ),
        Param(
            "mode",
            "string",
            "hybrid (default), lexical (exact words) or semantic (meaning).",
            enum=("hybrid", "lexical", "semantic"),
        ),
        Param(
            "after",
            "string",
            "Only memories at or after this ISO 8601 date or time: 2026-12-03 (from that "
            "local day's start), 2026-12-03T14:12 (local time), 2026-12-03T14:12:30Z or "
            "2026-12-03T14:12:30+01:00.",
        ),
        Param(
            "before",
            "string",
            "Only memories before this ISO 8601 date or time, not including it: "
            "2026-12-03 (up to that local day's start), 2026-12-03T14:12 (local time), "
            "2026-12-03T14:12:30Z or 2026-12-03T14:12:30+01:00.",
        ),
        Param("session", "string", "Only memories from this session id."),
        Param(
            "min_score",
            "number",
            "Only hits scoring at least this (calibrated relevance in [0, 1]; default "
            "search.min_score, 0 returns every match).",
            minimum=0,
            maximum=1,
        ),
        Param(
            "order",
            "string",
            "relevance (default: best match first) or newest (newest memories first).",
            enum=("relevance", "newest"),
        ),
    ),
    title="Search memory",
    read_only=True,
    idempotent=True,
)

MEMORY_EXPAND_SPEC = ToolSpec(
    "memory_expand",
    "L2 recall: the whole section a chunk hash came from, with its session anchor "
    "(session, turn, transcript). Use it when a search hit is suggestive but clipped. "
    "No model load; cheap.",
    (
        Param("chunk_hash", "string", "A chunk hash from memory_search.", required=True),
        _PROJECT,
    ),
    title="Expand a memory",
    read_only=True,
    idempotent=True,
)

MEMORY_TRANSCRIPT_SPEC = ToolSpec(
    "memory_transcript",
    "L3 recall: the original conversation turns around an anchored memory, following the "
    "branch the memory belongs to. Use it when a note lost the reasoning behind a decision. "
    "Pass the transcript path and turn from memory_expand's anchor. A pure file read.",
    (
        Param("transcript_path", "string", "The anchor's transcript path.", required=True),
        Param("turn", "string", "The anchor's turn id (or a unique prefix)."),
        _PROJECT,
    ),
    title="Read the original conversation",
    read_only=True,
    idempotent=True,
)

MEMORY_SIMILAR_SPEC = ToolSpec(
    "memory_similar",
    "More like this: the memories nearest in meaning to one you already have (a chunk hash "
    "from memory_search, or a session message id), itself excluded.",
    (
        Param(
            "chunk_hash",
            "string",
            "A chunk hash, or the id of a session message (kind session hit).",
            required=True,
        ),
        Param("k", "integer", "How many (default 10).", minimum=1, maximum=100),
    ),
    title="Find similar memories",
    read_only=True,
    idempotent=True,
)

MEMORY_FORGET_SPEC = ToolSpec(
    "memory_forget",
    "Delete one memory entry (or one memory compact block) for good. Pass exactly one "
    "of: a chunk_hash, or a date and a time together. No fuzzy matching. The result "
    "shows what was removed; it is the only copy left.",
    (
        Param(
            "chunk_hash",
            "string",
            "A chunk hash inside the entry to delete (its first 8 characters are enough "
            "when unique). Either this alone, or date and time instead.",
        ),
        Param(
            "date",
            "string",
            "The entry's date, YYYY-MM-DD; only together with time, never with chunk_hash.",
        ),
        Param(
            "time",
            "string",
            "The entry's time, HH:MM (HH:MM#N for the N-th of several entries written in "
            "that minute); only together with date, never with chunk_hash.",
        ),
    ),
    title="Forget a memory",
    destructive=True,
    # One of: chunk_hash alone, or date and time together.
    rule={
        "minProperties": 1,
        "dependentRequired": {"date": ["time"], "time": ["date"]},
        "dependentSchemas": {
            "chunk_hash": {
                "description": "A chunk hash names the entry alone: no date or time with it.",
                "not": {"anyOf": [{"required": ["date"]}, {"required": ["time"]}]},
            }
        },
    },
)

MEMORY_COMPACT_SPEC = ToolSpec(
    "memory_compact",
    "Condense the whole memory store (or one file) with an LLM into a summary appended "
    "to today's file. Spends LLM budget: only on explicit request.",
    (Param("source", "string", "Only this memory file (path)."),),
    title="Compact memory",
)

MEMORY_STATUS_SPEC = ToolSpec(
    "memory_status",
    "Doctor: what is missing and how to fix it, scope, collection, index state, chunk "
    "count, capture and auto-context state with counters. Reach for it first when recall "
    "misbehaves.",
    (),
    title="Memory status",
    read_only=True,
    idempotent=True,
)


# memory_topic's actions and search scopes (engine/topics/ops.py dispatches on them).
TOPIC_ACTIONS = ("add", "remove", "list", "search")
TOPIC_SEARCH_SCOPES = ("memory", "sessions")
#: Per action: the arguments it needs, and those it also takes. The schema
#: says it and engine/topics/ops.py checks it, from this one table.
TOPIC_ACTION_ARGUMENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add": (("content", "topic", "title"), ("type",)),
    "remove": (("entry",), ()),
    "list": ((), ()),
    "search": (("query",), ("scope",)),
}
_TOPIC_PARAMS = (
    Param("action", "string", "What to do.", required=True, enum=TOPIC_ACTIONS),
    Param("content", "string", "add: the knowledge to keep, in full sentences."),
    Param(
        "topic",
        "string",
        'add: the topic file, e.g. "debugging.md" or "Debugging Tips"; created if new.',
    ),
    Param(
        "title",
        "string",
        "add: a self-contained title; only titles reach future prompts (via MEMORY.md), "
        "so the title alone must say what was learned.",
    ),
    Param(
        "type",
        "string",
        "add: user (who the user is), feedback (lessons, corrections; default), "
        "project (state, deadlines), reference (pointers to external systems).",
        enum=TOPIC_TYPES,
    ),
    Param("entry", "string", "remove: the exact title of the entry to delete."),
    Param("query", "string", "search: what to look for."),
    Param(
        "scope",
        "string",
        'search: "memory" (topic files, default) or "sessions" (past conversations of '
        "this project).",
        enum=TOPIC_SEARCH_SCOPES,
    ),
)
#: Every argument but ``action``, from the params themselves.
TOPIC_FIELDS = tuple(p.name for p in _TOPIC_PARAMS if p.name != "action")


def topic_action_usage(action: str) -> str:
    """What *action* needs and may take, in words: the schema's rule and
    engine/topics/ops.py's errors say the same sentence."""
    needs, takes = TOPIC_ACTION_ARGUMENTS[action]
    return f"{action} needs {', '.join(needs) or 'nothing else'}" + (
        f" and may take {', '.join(takes)}" if takes else ""
    )


def _topic_action_rule() -> dict[str, Any]:
    """``if action is add then ... else if ...``: one root if/then/else chain
    (Claude Code passes it through; a root allOf of conditions it drops)."""
    rule: dict[str, Any] = {}
    for action in reversed(TOPIC_ACTIONS):
        needs, takes = TOPIC_ACTION_ARGUMENTS[action]
        foreign = [f for f in TOPIC_FIELDS if f not in needs and f not in takes]
        then: dict[str, Any] = {"description": topic_action_usage(action), "required": list(needs)}
        if foreign:
            then["not"] = {"anyOf": [{"required": [f]} for f in foreign]}
        step: dict[str, Any] = {
            "if": {"properties": {"action": {"const": action}}, "required": ["action"]},
            "then": then,
        }
        if rule:
            step["else"] = rule
        rule = step
    return rule


MEMORY_TOPIC_SPEC = ToolSpec(
    "memory_topic",
    "Curated knowledge that outlives the daily journal: topic files (one per subject, "
    "one '## title' entry per fact) indexed one line per topic in MEMORY.md, which every "
    "new session sees. Actions: add (content, topic, title, optional type) saves a "
    "durable learning — a preference, convention, debugging insight or project fact; "
    "remove (entry = exact title) deletes one entry; list shows topics and their entry "
    "titles; search (query, scope memory|sessions) returns whole entries, or matching "
    "messages from this project's past sessions. Secrets are redacted.",
    _TOPIC_PARAMS,
    title="Curated topics",
    destructive=True,
    rule=_topic_action_rule(),
)


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments, validated against the spec, with a clear error otherwise."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise MemlaneError(f"{spec.name}: arguments must be an object")
    known = {p.name: p for p in spec.params}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise MemlaneError(
            f"{spec.name}: unknown argument(s) {', '.join(unknown)}",
            f"it takes: {', '.join(known) or 'no arguments'}",
        )
    out: dict[str, Any] = {}
    for p in spec.params:
        value = arguments.get(p.name)
        if value is None:
            if p.required:
                raise MemlaneError(f"{spec.name}: missing required argument {p.name!r}")
            continue
        if p.type == "string" and not isinstance(value, str):
            raise MemlaneError(f"{spec.name}: {p.name} must be a string, got {value!r}")
        if p.type == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            raise MemlaneError(f"{spec.name}: {p.name} must be an integer, got {value!r}")
        if p.type == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise MemlaneError(f"{spec.name}: {p.name} must be a number, got {value!r}")
        if p.enum and value not in p.enum:
            raise MemlaneError(
                f"{spec.name}: {p.name} must be one of {', '.join(p.enum)}, got {value!r}"
            )
        if p.minimum is not None and value < p.minimum:
            raise MemlaneError(f"{spec.name}: {p.name} must be at least {p.minimum}")
        if p.maximum is not None and value > p.maximum:
            raise MemlaneError(f"{spec.name}: {p.name} must be at most {p.maximum}")
        out[p.name] = value
    return out
