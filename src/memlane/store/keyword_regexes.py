"""detect-secrets' keyword regexes (``password = "…"``, ``api_key: …``), run in
linear time.

Run as they are, with ``finditer``, a regex that starts with the keyword
list and ``\\w*`` is tried at every keyword of a run of word characters, each
try reaching to the run's end and back: "password" repeated 500 times held
the process (and, through the interpreter lock, every other request of the
engine) for 3.6 s, and longer runs for minutes. ``keyword_matches`` finds
the same matches trying each such regex once per run (store/redaction.py
calls it for every line that holds a keyword root).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

# What every word of detect-secrets' keyword list (DENYLIST: api_?key, db_?pass, pwd,
# secret, contraseña, ...) contains: a line without one cannot match a keyword regex.
KEYWORD_ROOT_RE = re.compile(r"key|pass|pwd|secret|contrase", re.IGNORECASE)

_WORD_RE = re.compile(r"\w+")
# A keyword regex that starts with the keyword list and ``\w*`` (most of
# detect-secrets' table).
_LEADING_KEYWORD_RE = re.compile(r"\A\(([^()\[\]\\]+)\)\\w\*")


@lru_cache(maxsize=64)
def _leading_keyword(regex: re.Pattern[str]) -> re.Pattern[str] | None:
    found = _LEADING_KEYWORD_RE.match(regex.pattern)
    return re.compile(found.group(1), regex.flags) if found else None


def keyword_matches(regex: re.Pattern[str], line: str) -> Iterator[re.Match[str]]:
    r"""``regex.finditer(line)``, in linear time for a keyword regex: only the
    first keyword of a run of word characters is tried. Its ``\w*`` reaches
    everything a later one could, so when it fails they all fail, and when it
    matches it is the match finditer finds."""
    keyword = _leading_keyword(regex)
    if keyword is None:
        yield from regex.finditer(line)
        return
    pos = 0
    while (hit := keyword.search(line, pos)) is not None:
        match = regex.match(line, hit.start())
        if match is not None:
            yield match
            pos = max(match.end(), hit.start() + 1)
        else:
            run = _WORD_RE.match(line, hit.start())
            pos = run.end() if run is not None else hit.end()
