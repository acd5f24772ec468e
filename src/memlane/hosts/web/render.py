"""HTML building blocks: escaping, the page frame, a safe little markdown.

Every value that reaches a page goes through ``esc`` (``html.escape`` with
quotes), so text from memory files, transcripts or a query can never add
markup. Markdown is never passed through as HTML: ``markdown_html`` knows
headings, bullets, fenced code and inline code, and escapes everything else.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from urllib.parse import urlencode

NAV = (
    ("/", "Timeline"),
    ("/search", "Search"),
    ("/topics", "Topics"),
    ("/sessions", "Sessions"),
    ("/health", "Health"),
)
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.+)$")
_BULLET_RE = re.compile(r"^\s*[-*]\s+(.*)$")
#: Inline code, and MEMORY.md's links to its topic files (the only links
#: rendered as links: they stay inside the viewer).
_INLINE_RE = re.compile(
    r"`(?P<code>[^`\n]+)`|\[(?P<text>[^\]\n]+)\]\(topics/(?P<slug>[\w-]+)\.md\)"
)
_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
#: The token prefix every link of the current request starts with (set by
#: security.Guard for the request; empty outside one, e.g. in unit tests).
ROOT: ContextVar[str] = ContextVar("memlane_ui_root", default="")


def esc(value: object) -> str:
    """*value* as text safe inside an element or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def url(path: str, params: Mapping[str, object] | None = None) -> str:
    """The viewer's *path* (under the token prefix) with the non-empty *params*
    as its query string (escape it with ``esc``)."""
    query = {k: str(v) for k, v in (params or {}).items() if v not in (None, "")}
    where = ROOT.get() + path
    return f"{where}?{urlencode(query)}" if query else where


def link(href: str, text: object, **attrs: str) -> str:
    extra = "".join(f' {name.rstrip("_")}="{esc(value)}"' for name, value in attrs.items())
    return f'<a href="{esc(href)}"{extra}>{esc(text)}</a>'


#: The agent a session came from, by the format its transcript was read as
#: (transcripts/model.py); a format not named here is shown as recorded.
AGENT_NAMES = {"pi": "pi", "claude-code": "Claude Code", "codex": "Codex", "opencode": "OpenCode"}
_AGENT_CLASS_RE = re.compile(r"[^a-z0-9-]")


def agent_label(fmt: str | None) -> str:
    """The agent as a small label: ``<span class="agent agent-claude-code">Claude Code</span>``."""
    name = AGENT_NAMES.get(fmt, fmt) if fmt else "unknown agent"
    slug = _AGENT_CLASS_RE.sub("", (fmt or "unknown").lower())
    return f'<span class="agent agent-{slug}">{esc(name)}</span>'


def page(title: str, body: str, *, active: str = "", notices: Iterable[str] = ()) -> str:
    """A whole page: the navigation bar, *title* and *body* (already HTML)."""
    nav = "".join(
        f'<a href="{esc(url(href))}"{" class=active" if href == active else ""}>{esc(name)}</a>'
        for href, name in NAV
    )
    shown = "".join(f'<p class="notice">{esc(text)}</p>' for text in notices)
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · memlane</title>"
        f'<link rel="stylesheet" href="{esc(url("/static/app.css"))}">'
        f'<script src="{esc(url("/static/app.js"))}" defer></script></head>'
        f'<body data-root="{esc(ROOT.get())}"><nav><span class="brand">memlane</span>{nav}</nav>'
        f"<main><h1>{esc(title)}</h1>{shown}{body}</main></body></html>\n"
    )


def error_box(message: str, hint: str | None) -> str:
    hinted = f'<p class="hint">{esc(hint)}</p>' if hint else ""
    return f'<div class="error"><p>{esc(message)}</p>{hinted}</div>'


def pager(path: str, params: Mapping[str, object], page_no: int, has_more: bool) -> str:
    """Previous / next links for a list shown a page at a time (pages count from 1)."""
    parts = []
    if page_no > 1:
        parts.append(link(url(path, {**params, "page": page_no - 1}), "← newer", rel="prev"))
    parts.append(f"<span>page {page_no}</span>")
    if has_more:
        parts.append(link(url(path, {**params, "page": page_no + 1}), "older →", rel="next"))
    return f'<p class="pager">{" ".join(parts)}</p>'


def _inline(text: str) -> str:
    """One line of text: escaped, with `code` spans and links to topic files."""
    out = []
    last = 0
    for match in _INLINE_RE.finditer(text):
        out.append(esc(text[last : match.start()]))
        if match.group("code") is not None:
            out.append(f"<code>{esc(match.group('code'))}</code>")
        else:
            out.append(link(url(f"/topics/{match.group('slug')}"), match.group("text")))
        last = match.end()
    out.append(esc(text[last:]))
    return "".join(out)


def markdown_html(text: str) -> str:
    """A safe rendering of memory markdown: headings, bullets, fenced code,
    inline code, links to topic files and paragraphs; HTML comments
    (anchors) are left out and any other markup is shown as text."""
    out: list[str] = []
    in_list = False
    fence: list[str] | None = None
    for line in _COMMENT_RE.sub("", text).split("\n"):
        if fence is not None:
            if line.strip().startswith("```"):
                out.append(f"<pre><code>{esc(chr(10).join(fence))}</code></pre>")
                fence = None
            else:
                fence.append(line)
            continue
        bullet = _BULLET_RE.match(line)
        if in_list and not bullet:
            out.append("</ul>")
            in_list = False
        if line.strip().startswith("```"):
            fence = []
        elif bullet:
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{_inline(bullet.group(1))}</li>")
        elif heading := _HEADING_RE.match(line):
            level = min(len(heading.group(1)) + 1, 6)  # the page's own title is the h1
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    if in_list:
        out.append("</ul>")
    if fence is not None:
        out.append(f"<pre><code>{esc(chr(10).join(fence))}</code></pre>")
    return "".join(out)
