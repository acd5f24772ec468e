"""Turn free user text into an FTS5 MATCH expression that cannot fail.

User text never reaches FTS5's query grammar: it is cut into word tokens,
each token is double-quoted (a quoted string is always a valid FTS5 phrase,
whatever the tokenizer then makes of it), and the phrases are OR-ed. So
quotes, parentheses, ``*``, ``-``, ``:``, ``NEAR`` and ``AND/OR/NOT`` in the
query are plain words or separators, never operators.
"""

from __future__ import annotations

import re

# \w+ under Python's unicode rules: letters, digits and underscore in every
# script. A CJK run stays one token, as unicode61 tokenizes it; emoji and
# punctuation are separators. Quotes can never be part of a token.
_WORD_RE = re.compile(r"\w+")

# Kept small on purpose: only words that carry no topic. Dropping them keeps
# the OR query from matching (and bm25-scoring) most of the collection.
_STOPWORD_TEXT = """
a an and are as at be been but by can could did do does for from had has
have how i if in into is it its me my no not of on or our so than that the
their them then there these they this to was we were what when where which
who why will with would you your
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# A pasted paragraph must not become a 300-term OR: past this many distinct
# terms the extra ones add latency, not recall.
MAX_QUERY_TERMS = 64


def query_terms(text: str) -> list[str]:
    """Distinct lowercase word tokens of ``text`` in order, stopwords dropped.

    A query made only of stopwords keeps them (``"what is it"`` still
    searches for something).
    """
    seen: dict[str, None] = {}
    for token in _WORD_RE.findall(text.lower()):
        seen.setdefault(token, None)
    tokens = list(seen)
    content = [t for t in tokens if t not in STOPWORDS]
    return (content or tokens)[:MAX_QUERY_TERMS]


def fts_match_expression(text: str) -> str | None:
    """The FTS5 MATCH string for ``text``, or None when it has no words."""
    terms = query_terms(text)
    if not terms:
        return None
    # A token holds only \w characters, so it contains no '"' to escape.
    return " OR ".join(f'"{term}"' for term in terms)
