"""The kinds of topic a curated entry can be: ``type:`` in a topic file's frontmatter.

A leaf of the standard library's weight: the store checks a topic's type
against these (store/topics), and the ``memory_topic`` tool's schema lists
them (engine/shared/tool_catalog.py), which ``memlane mcp`` reads before importing
anything else.
"""

from __future__ import annotations

TOPIC_TYPES = ("user", "feedback", "project", "reference")
