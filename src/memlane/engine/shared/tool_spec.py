"""What an agent tool is: a name, a description, its arguments and its effect.

A leaf: it imports nothing from the engine, so anything (the tool catalog,
engine/shared/tool_catalog.py, which declares each tool with these; the topic tool
in engine/topics/ops.py; the echo filter; a host listing its tools) can read
a spec without pulling in what the tools do. ``check_arguments`` gives a bad
call the same clear error on every host.
"""

from __future__ import annotations

from collections.abc import Mapping

from memlane.core.errors import MemlaneError

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

    ``title`` is the short name a host shows a person; ``snippet`` the one line
    a host lists the tool by in its prompt (pi's ``promptSnippet``). The effect flags are
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
        "snippet",
        "title",
    )
    _unhashed = ("rule",)
    name: str
    description: str
    params: tuple[Param, ...]
    title: str
    snippet: str
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
        snippet: str = "",
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
            snippet=snippet,
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
