"""The pages' HTML: Jinja2 templates (``templates/``), links, the agent label.

Every template is autoescaped: a value from a memory file, a transcript or
a query is escaped wherever it lands, so it can never add markup; only the
templates' own markup, the macros' output and markdown.py's rendering are
HTML. ``None`` shows as nothing. Jinja2 is imported when the first page is
rendered, never on the command line's start path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from markupsafe import Markup

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).with_name("templates")
NAV = (
    ("/", "Home"),
    ("/search", "Search"),
    ("/topics", "Topics"),
    ("/sessions", "Sessions"),
    ("/agent", "Agent"),
    ("/health", "Health"),
)
#: The token prefix every link of the current request starts with (set by
#: security.Guard for the request; empty outside one, e.g. in unit tests).
ROOT: ContextVar[str] = ContextVar("memlane_ui_root", default="")
#: The agent a session came from, by the format its transcript was read as
#: (transcripts/model.py); a format not named here is shown as recorded.
AGENT_NAMES = {"pi": "pi", "claude-code": "Claude Code", "codex": "Codex", "opencode": "OpenCode"}
_AGENT_CLASS_RE = re.compile(r"[^a-z0-9-]")


def url(path: str, params: Mapping[str, object] | None = None) -> str:
    """The viewer's *path* (under the token prefix) with the non-empty *params*
    as its query string."""
    query = {k: str(v) for k, v in (params or {}).items() if v not in (None, "")}
    where = ROOT.get() + path
    return f"{where}?{urlencode(query)}" if query else where


def ago(day: str, today: date) -> str:
    """``today``, ``1 day ago``, ``12 days ago`` (empty for what is not a date)."""
    try:
        days = (today - date.fromisoformat(day[:10])).days
    except ValueError:
        return ""
    if days <= 0:
        return "today"
    return f"{days} day{'' if days == 1 else 's'} ago"


def agent_label(fmt: str | None) -> Markup:
    """The agent as a small label: ``<span class="agent agent-claude-code">Claude Code</span>``."""
    name = AGENT_NAMES.get(fmt, fmt) if fmt else "unknown agent"
    slug = _AGENT_CLASS_RE.sub("", (fmt or "unknown").lower())
    return Markup('<span class="agent agent-{}">{}</span>').format(slug, name)


def render(template: str, **context: Any) -> str:
    """*template* (a file under ``templates/``) filled with *context*; a whole
    page takes ``title`` and may take ``active`` (its navigation link) and
    ``notices``."""
    context.setdefault("active", "")
    context.setdefault("notices", ())
    return environment().get_template(template).render(context)


@functools.cache
def environment() -> Environment:
    """The templates' environment (one per process): autoescaping on for
    every template, an undefined name an error rather than an empty string."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from memlane.hosts.web.markdown import markdown_html

    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        auto_reload=False,  # package data: they never change while the viewer runs
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda value: "" if value is None else value,
    )
    env.globals.update(url=url, root=ROOT.get, nav=NAV, agent_label=agent_label)
    env.filters["markdown"] = lambda text: Markup(markdown_html(str(text), ROOT.get()))
    return env
