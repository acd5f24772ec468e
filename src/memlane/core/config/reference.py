"""docs/configuration.md, written from the key registry.

``memlane config reference`` prints it; a test keeps the committed file equal
to it, so every setting is documented with its real default and range.
"""

from __future__ import annotations

from memlane.core.config.files import render_toml
from memlane.core.config.key import Key
from memlane.core.config.keys import KEYS

_INTRO = """\
# Configuration reference

Every memlane setting, with its default, the values it accepts and what it
does. This page is generated from the settings' declarations by
`memlane config reference > docs/configuration.md`; a test fails when it and
the declarations differ.

## Where settings come from

Four layers, later wins:

1. the built-in defaults below;
2. the global file `$MEMLANE_HOME/config.toml` (`~/.memlane/config.toml`
   unless `MEMLANE_HOME` is set);
3. the project's `.memlane.toml` in the repository's top directory, read
   only after `memlane trust` (a project file can send memory elsewhere, so
   a cloned repository's file is not applied silently, and editing it
   withdraws the trust until you run `memlane trust` again; a change made
   with `memlane config set --project` keeps the trust of a file you
   trusted, or gives it to the file it creates);
4. environment variables: `MEMLANE_<SECTION>_<KEY>`, e.g.
   `MEMLANE_SEARCH_TOP_K=8` for `search.top_k` (some keys also answer to an
   older name, listed with the key).

`memlane config set KEY VALUE` writes the global file (`--project`: the
project's; `--unset` removes the key), `memlane config get KEY` prints the
value in force, `memlane config list --resolved` shows every value with
the layer it came from and `memlane config describe [KEY]` adds what each
accepts and when a change applies. A file holds one table per section:

```toml
{example}```

Secrets (API keys, tokens) are never stored in a file: write
`env:VARIABLE` and export the secret in that variable.

## When a change applies

A setting marked *applies at once* is followed by running agent sessions
(pi, Claude Code) from their next prompt: switching auto-context or the
topic memory, the search defaults, auto-recall. Every other setting (the
embedding model, the index, capture, the sessions layer's sweep) applies
from the next session; in pi, `/memory settings` says which is which.

## A value that is not allowed

Every setting has a type and a range (the "allowed" column).

- `memlane config set` refuses a bad value with one line naming the key,
  the value and what is allowed, and writes nothing.
- A bad value in a file or an environment variable is not used: the key
  keeps the value of the layer beneath (in the end its default), and every
  command that opens the memory says so in one line on stderr, e.g.
  `memlane: ~/.memlane/config.toml: search.top_k = 0 is not allowed: it must
  be a whole number from 1 to 100; search.top_k stays 5 (default) until that
  is fixed`. `memlane status` lists the same line under `missing`, and an
  agent session (pi, Claude Code) shows it among its start notices.
- A file that is not valid TOML is not used at all, reported the same way;
  a key memlane does not know is ignored with a note (a later version may
  have added it). A file that cannot be read at all (no permission, a
  `MEMLANE_HOME` that is not a directory) stops each command with one line
  naming it, as any broken environment does.

Memory keeps working meanwhile: an agent's hooks run without a terminal to
show an error, so refusing to start over one bad value would switch memory
off without a word.

## Settings
"""


def render_reference() -> str:
    """The whole of docs/configuration.md."""
    example = render_toml({"search": {"top_k": 8}, "capture": {"enabled": True}})
    parts = [_INTRO.format(example=example)]
    by_section: dict[str, list[Key]] = {}
    for key in KEYS.values():
        by_section.setdefault(key.name.split(".", 1)[0], []).append(key)
    for section, keys in by_section.items():
        parts.append(f"\n### [{section}]\n\n")
        parts.append("| setting | default | allowed | what it does |\n|---|---|---|---|\n")
        for key in keys:
            parts.append(
                f"| {_setting_cell(key)} | {_default(key)} | {_cell(key.allowed)} "
                f"| {_cell(key.help)} |\n"
            )
    return "".join(parts)


def _setting_cell(key: Key) -> str:
    names = [f"`{key.name}`", f"`{key.env_name}`"]
    names += [f"`{alias}`" for alias in key.aliases]
    if key.live:
        names.append("*applies at once*")
    return "<br>".join(names)


def _default(key: Key) -> str:
    if key.default is None:
        return "(unset)"
    if isinstance(key.default, bool):
        return "`true`" if key.default else "`false`"
    if isinstance(key.default, str):
        return f'`"{key.default}"`' if key.default else '`""`'
    return f"`{key.default!r}`"


def _cell(text: str) -> str:
    """Text in a table cell: a ``|`` would end the cell."""
    return text.replace("|", "\\|")
