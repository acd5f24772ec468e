"""What a setting is (``Key``) and the one check of a raw value against it.

``config set``, a config file and an environment variable all go through
``coerce``: the value must have the key's type, be one of its choices, lie in
its range and pass its own rule. The error is one line naming the key, the
bad value and what is allowed; layers.py decides what a bad value loaded from
a file or the environment does (it is not used, and every command says so).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memlane.core.errors import ConfigError

SECRET_PREFIX = "env:"

Scalar = str | int | float | bool

#: A string setting's own rule: True when the text is acceptable.
Rule = Callable[[str], bool]


@dataclass(frozen=True)
class Key:
    name: str  # "section.key"
    type: type
    default: Scalar | None
    help: str
    secret: bool = False
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # extra environment names (drop-in migration)
    low: float | None = None  # smallest allowed number, inclusive
    high: float | None = None  # largest allowed number, inclusive
    rule: Rule | None = None  # a string's own check (see ``allowed``)
    rule_text: str = ""  # what ``rule`` accepts, for people
    # A running agent session follows a change from its next prompt
    # (engine/live/switch.py); any other key applies from the next session.
    live: bool = False

    @property
    def env_name(self) -> str:
        section, key = self.name.split(".", 1)
        return f"MEMLANE_{section.upper()}_{key.upper()}"

    @property
    def allowed(self) -> str:
        """What this key accepts, as a person reads it: "a whole number from 1 to 100"."""
        if self.type is bool:
            return "true or false"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.type in (int, float):
            noun = "a whole number" if self.type is int else "a number"
            low, high = _shown(self.low), _shown(self.high)
            if low is not None and high is not None:
                return f"{noun} from {low} to {high}"
            if low is not None:
                return f"{noun} of at least {low}"
            return noun
        if self.rule_text:
            return self.rule_text
        return "env:VARIABLE (a file never holds the secret itself)" if self.secret else "any text"


def _shown(bound: float | None) -> str | None:
    if bound is None:
        return None
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def coerce(key: Key, raw: Any, origin: str | None) -> Scalar:
    """*raw* from a file, the environment or the command line (origin None) as
    the key's type, or a ``ConfigError`` of one line: where, key, value, allowed."""
    try:
        value = _typed(key, raw)
    except (TypeError, ValueError, OverflowError):
        value = None
    if value is None or not _acceptable(key, value):
        where = f"{origin}: " if origin else ""
        shown = raw if isinstance(raw, str) else _toml_like(raw)
        raise ConfigError(
            f"{where}{key.name} = {shown!r} is not allowed: it must be {key.allowed}",
            f"the default is {key.default!r}" if key.default is not None else None,
        )
    return value


def _typed(key: Key, raw: Any) -> Scalar | None:
    if key.type is bool:
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().lower()
        if word in ("1", "true", "on", "yes"):
            return True
        if word in ("0", "false", "off", "no"):
            return False
        return None
    if key.type is int:
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            return None  # 5.0 is 5; 5.5 is no whole number, not 5
        return int(str(raw).strip()) if isinstance(raw, str) else int(raw)
    if key.type is float:
        if isinstance(raw, bool):
            return None
        number = float(raw)
        return number if math.isfinite(number) else None
    return raw if isinstance(raw, str) else None


def _acceptable(key: Key, value: Scalar) -> bool:
    if key.choices and value not in key.choices:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        if key.low is not None and value < key.low:
            return False
        if key.high is not None and value > key.high:
            return False
    if key.rule is not None and isinstance(value, str) and value != "":
        return key.rule(value)
    return True


def _toml_like(raw: Any) -> Any:
    return raw if isinstance(raw, int | float | bool) else str(raw)


# --- the string settings' own rules ---------------------------------------------------


def parse_delays(text: str) -> tuple[int, ...]:
    """``"200,500,1000"`` as milliseconds; ValueError unless each is a whole number >= 0."""
    delays = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    if any(d < 0 for d in delays):
        raise ValueError(text)
    return delays


def delays_rule(text: str) -> bool:
    try:
        parse_delays(text)
    except ValueError:
        return False
    return True


# Milvus's rule for a collection name; the SQLite backend names its file after
# it, so a "/" or ".." must never get through either.
_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


def collection_rule(text: str) -> bool:
    return _COLLECTION.fullmatch(text) is not None
