"""Migration: pi-memory and Claude Code auto memory into memlane's topic layer.

Both tools keep a directory of markdown files next to a ``MEMORY.md`` index:

- pi-memory (``pi_memory``): topic files (``debugging.md``) carry frontmatter
  ``name``, ``description``, ``type``, ``updated`` and one ``## title`` block
  per entry; ``MEMORY.md`` holds one ``- [Name](file.md) — hook`` line per
  topic.
- Claude Code (``claude_code``): a memory file holds one fact under
  frontmatter ``name``, ``description``, ``type``; older ones have no
  frontmatter, and ``MEMORY.md`` may hold free-form notes besides its
  pointer lines.

Each source's module says where the tool keeps a project's memory. Rules
every import follows (``scan`` and ``apply``, shared): every topic and entry
lands in ``<store>/topics/`` through ``memlane.store.topics`` (which redacts
secrets); an entry already present (same topic, same title or a suffixed
import of it, same content) is skipped, so re-running adds nothing; the same
title with other content is added under ``"<title> (imported <date>)"``,
never overwriting; whatever cannot be read as entries is kept verbatim in
the ``imported-<source>`` topic and reported. This package only re-exports.
"""

from memlane.engine.topics.importers.apply import IMPORT_SUFFIX
from memlane.engine.topics.importers.claude_code import (
    CLAUDE_NAME_MAX,
    claude_projects_dir,
    default_claude_code_dir,
    import_claude_code,
)
from memlane.engine.topics.importers.pi_memory import (
    PI_HASH_CHARS,
    default_pi_memory_dir,
    import_pi_memory,
    pi_memory_hash,
    pi_memory_root,
)
from memlane.engine.topics.importers.report import (
    CLAUDE_CODE,
    PI_MEMORY,
    SOURCE_LABELS,
    ImportItem,
    ImportReport,
)

__all__ = [
    "CLAUDE_CODE",
    "CLAUDE_NAME_MAX",
    "IMPORT_SUFFIX",
    "PI_HASH_CHARS",
    "PI_MEMORY",
    "SOURCE_LABELS",
    "ImportItem",
    "ImportReport",
    "claude_projects_dir",
    "default_claude_code_dir",
    "default_pi_memory_dir",
    "import_claude_code",
    "import_pi_memory",
    "pi_memory_hash",
    "pi_memory_root",
]
