"""What the agent sees of its memory, and what it costs: the session-start
snapshot as a session builds it, a sample of the auto-context a prompt would
get, and their sizes in characters and in tokens (the web viewer's "What
the agent sees" page).

Tokens are counted with the bundled embedding model's tokenizer
(all-MiniLM-L6-v2's WordPiece, ``tokenizer.json`` in the package: no model
is loaded, no network), without truncation or special tokens. An agent's
own model counts with its own tokenizer, so this is a measure of the text,
not of a particular model's bill.

The sample auto-context is what ``AutoContext.hidden_message`` pushes from
the journal, found as a session finds it while its embedding model loads:
the lexical leg, on the lexical calibration, with the session's floor, top
k and character budget, outdated entries and what the snapshot holds left
out. Topic surfacing and past-session recall are not sampled.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.engine.journal.snapshot import Snapshot
    from memlane.engine.shared.ports import ProjectMemory

#: The session id the viewer's snapshot is built for (it excludes no session from the primer).
VIEWER_SESSION = "memlane-ui"


@dataclass(frozen=True)
class Sized:
    """A text the agent is given, with its size."""

    text: str
    chars: int
    tokens: int

    @classmethod
    def of(cls, text: str) -> Sized:
        return cls(text, len(text), token_count(text))


@functools.cache
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    from memlane.embed.onnx.files import BUNDLED_TOKENIZER

    tokenizer = Tokenizer.from_file(str(BUNDLED_TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def token_count(text: str) -> int:
    """Tokens of *text* for the bundled tokenizer (no special tokens, no cut)."""
    if not text:
        return 0
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def snapshot(mem: ProjectMemory) -> Snapshot:
    """The stable snapshot a session starting now would append to its system prompt."""
    from memlane.engine.live.session_snapshot import session_snapshot

    built, _ = session_snapshot(mem, mem.config.session, VIEWER_SESSION)
    return built


def sample_auto_context(mem: ProjectMemory, prompt: str, seen: Snapshot) -> str:
    """The journal auto-context *prompt* would get beside snapshot *seen*
    (empty when nothing clears the floor); see the module docstring."""
    from memlane.core.render import render_injection

    settings = mem.config.session
    query = prompt.strip()[: settings.auto_context_query_limit]
    if not query:
        return ""
    from memlane.engine.live.auto_context import OWN_ENTRY_ROOM, pushable

    k = settings.auto_context_top_k + OWN_ENTRY_ROOM  # as many as a session asks for
    hits = mem.search(query, k, mode="lexical", sync=False).hits
    kept = pushable(hits, settings, seen, own_entry=lambda _content: False)
    return render_injection(kept, settings.auto_context_char_budget, str(mem.scope.repository_dir))
