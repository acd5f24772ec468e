"""A cheap first look for text that is only shown back, never stored (a search query).

Loading the redactor costs a new process about 0.1 s (compiling its
patterns); a search whose query is plain words need not pay it. Every rule
of ``store/redaction.py`` needs one of these to match: a run of 8 or more
non-blank characters holding a digit or a symbol (tokens, keys, URLs,
assignments, JWTs, PEM headers) or a secret-sounding word (``password``,
``token``, ``<private>`` …). Text with neither cannot hold a secret the
redactor would replace; text with either goes through the redactor.
"""

from __future__ import annotations

import re

_SCREEN_RE = re.compile(
    r"(?=\S{8})\S*?[^\sA-Za-z]|pass|pwd|secret|token|key|priv|auth|bearer|machine|cred",
    re.IGNORECASE,
)


def redacted_for_display(text: str) -> str:
    """*text* with its secrets replaced, loading the redactor only when it may hold one."""
    if _SCREEN_RE.search(text) is None:
        return text
    from memlane.store.redaction import redact

    return redact(text).text
