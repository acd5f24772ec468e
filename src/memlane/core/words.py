"""Content words of free text, for the comparisons that run in Python.

Topic surfacing (prompt against topic cards) and the echo check (an answer
against what memlane's tools returned) compare the words of two texts
without an index. Both use this list of words that say nothing about a
subject; surfacing stems with the index's own FTS5 porter tokenizer
(engine/topics/surfacing/terms.py), the echo check with this light suffix
strip.
"""

from __future__ import annotations

import functools

_FUNCTION_WORD_TEXT = """
a about above after again all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each even every
few for from further get gets got had has have having he her here hers him his how i if
in into is it its itself just let lets like ll make me more most much must my need no
nor not now of off on once only or other our ours out over own please re same see she
should so some such than thank thanks that the their theirs them then there these they
this those through to too under until up use used using ve very via want was way we well
were what when where which while who whom why will with would yes yet you your yours
something anything thing things help tell show give take know think look one two today
still
"""
#: Function words and the filler of requests ("help", "show", "tell"): a
#: text made only of these is about nothing.
FUNCTION_WORDS = frozenset(_FUNCTION_WORD_TEXT.split())


@functools.lru_cache(maxsize=65536)
def light_stem(word: str) -> str:
    """A crude suffix strip, enough to meet "timeouts"/"timeout",
    "deploying"/"deploy" and "shipping"/"ship" without a stemmer dependency."""
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix in ("ies", "ied"):
                return word[: -len(suffix)] + "y"
            stem = word[: -len(suffix)]
            if (
                suffix in ("ing", "ed")
                and len(stem) >= 4
                and stem[-1] == stem[-2]
                and stem[-1] not in "aeiouls"
            ):
                return stem[:-1]  # a doubled final consonant: "shipp" -> "ship"
            return stem
    return word
