"""Memory markdown as safe HTML, through markdown-it-py (CommonMark).

Markup in the source is never passed through (``html=False``: a ``<script>``
in a note is shown as text). The only links rendered as links are MEMORY.md's
links to its topic files (``[name](topics/<slug>.md)``), pointed at the
viewer's own topic page; any other link, autolink or image stays text.
HTML comments (the anchors memlane writes) are left out. Headings move one
level down (the page's own title is the h1), and a line that is not indented
under a bullet ends it (memlane's notes are written a line an item), so a
bullet never swallows the next line.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from markdown_it.rules_block import StateBlock
    from markdown_it.rules_core import StateCore
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
#: MEMORY.md's links to its topic files: the only links shown as links.
_TOPIC_LINK_RE = re.compile(r"topics/([\w-]+)\.md")


#: Rendered notes kept (a page shows the same entries again and again: a day,
#: a search's hits, MEMORY.md): markdown-it costs about 0.15 ms an entry.
CACHED_NOTES = 4096


@functools.lru_cache(maxsize=CACHED_NOTES)
def markdown_html(text: str, root: str = "") -> str:
    """*text* (memory markdown) as HTML that adds no markup of its own; links
    to topic files point under *root* (the viewer's token prefix)."""
    rendered: str = _parser().render(_COMMENT_RE.sub("", text), {"root": root})
    return rendered


@functools.cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True})
    # Indented lines are wrapped text in notes, not code; images are not shown.
    md.disable(["code", "image"])
    md.validateLink = lambda url: _TOPIC_LINK_RE.fullmatch(url) is not None  # type: ignore[method-assign]
    md.block.ruler.before("paragraph", "line_under_bullet", _outdented_line, {"alt": ["paragraph"]})
    md.core.ruler.push("heading_below_title", _heading_below_title)
    md.add_render_rule("link_open", _topic_link)
    md.add_render_rule("fence", _fence)
    return md


def _outdented_line(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A paragraph's terminator: a line less indented than the list item it
    would lazily continue (CommonMark's lazy continuation) ends the item."""
    return silent and 0 <= state.sCount[start] < state.blkIndent


def _heading_below_title(state: StateCore) -> None:
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1:]) + 1, 6)}"


def _topic_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    found = _TOPIC_LINK_RE.fullmatch(str(tokens[idx].attrGet("href") or ""))
    href = f"{env.get('root', '')}/topics/{found.group(1)}" if found else ""
    return f'<a href="{html.escape(href, quote=True)}">'


def _fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    code: Any = tokens[idx].content
    return f"<pre><code>{html.escape(str(code).removesuffix(chr(10)), quote=True)}</code></pre>\n"
