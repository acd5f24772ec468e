"""The redaction rules as data the pi package's TypeScript redactor reads.

Without the engine (memlane missing, or its sidecar given up), the pi package
still appends ``memory_write`` and capture entries to the daily file itself
(integrations/pi/extensions/memlane/degraded.ts), and nothing secret may be
written there either. Its redactor (redact.ts) runs the same rules as
``store/redaction.py``: this module is where they cross over. Every regex the
Python rules scan with (detect-secrets' plugins and keyword table, memlane's
own token formats, the assignment, prose, header, URL and context rules, the
private-key block finders) and every word list and threshold they judge by is
exported, converted to JavaScript regex syntax, into
``integrations/pi/extensions/memlane/redaction-patterns.json``; the
TypeScript holds only the span logic around them. A test keeps the shipped
file equal to ``export()`` (tests/hosts/test_pi_redaction_export.py), and an
end-to-end test runs every row of the secret table through the TypeScript
(tests/e2e/test_pi_redaction.py).

Regenerate after changing a rule: ``python -m memlane.hosts.pi.redaction_js``.

The conversion keeps Python's meaning where the two dialects differ:
``(?P<n>`` becomes ``(?<n>``; ``.`` never matches a line feed only
(``[^\\n]``, or ``[\\s\\S]`` under DOTALL); ``\\A``/``\\Z`` are the start and
end of the text; ``$`` and, under MULTILINE, ``^`` mean what they mean in
Python (a line feed, not ``\\r``, ends a line); a character class opening
with ``]`` keeps it literal; and a case-blind pattern holding a
case-sensitive group (``(?-i:...)``, which the engine of Node 22 does not
know) is written out case by case instead.
"""

from __future__ import annotations

import re
from typing import Any

from memlane.hosts.pi import package_data
from memlane.store import keyword_regexes, private_keys, redaction, redaction_patterns
from memlane.store import redaction_rules as rules

#: The file the pi package reads, beside its modules.
EXPORT_NAME = "redaction-patterns.json"
FORMAT_VERSION = 1

_IGNORECASE = re.IGNORECASE
_MULTILINE = re.MULTILINE
_DOTALL = re.DOTALL
_VERBOSE = re.VERBOSE


class UnconvertibleRegex(ValueError):
    """A Python regex uses syntax this converter does not translate."""


def to_js(pattern: str, flags: int) -> tuple[str, str]:
    """(JavaScript source, JavaScript flags) matching what *pattern* matches in Python.

    The flags never include ``g``, ``y``, ``d`` or ``m``: the reader adds the
    iteration flags it needs, and multi-line anchors are spelled out.
    """
    if flags & _VERBOSE and re.search(r"\s|#", pattern):
        raise UnconvertibleRegex(f"verbose pattern with whitespace or comments: {pattern!r}")
    fold = bool(flags & _IGNORECASE) and "(?-i:" in pattern
    out = _Converter(pattern, flags, fold).run()
    js_flags = "i" if flags & _IGNORECASE and not fold else ""
    return out, js_flags


class _Converter:
    def __init__(self, pattern: str, flags: int, fold: bool) -> None:
        self.p = pattern
        self.i = 0
        self.flags = flags
        # Case folding spelled out (the pattern is compiled without "i"):
        # a depth counter of (?-i:...) groups, inside which letters stay as written.
        self.fold = fold
        self.sensitive_depth = 0
        self.group_stack: list[bool] = []  # per open group: is it a (?-i:) group

    def run(self) -> str:
        out: list[str] = []
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if c == "\\":
                out.append(self._escape())
            elif c == "[":
                out.append(self._char_class())
            elif c == "(":
                out.append(self._group_open())
            elif c == ")":
                self.i += 1
                if self.group_stack and self.group_stack.pop():
                    self.sensitive_depth -= 1
                out.append(")")
            elif c == ".":
                self.i += 1
                out.append(r"[\s\S]" if self.flags & _DOTALL else r"[^\n]")
            elif c == "^":
                self.i += 1
                out.append(r"(?:^|(?<=\n))" if self.flags & _MULTILINE else "^")
            elif c == "$":
                self.i += 1
                out.append(r"(?=\n|$)" if self.flags & _MULTILINE else r"(?=\n?$)")
            else:
                self.i += 1
                out.append(self._letter(c))
        if self.group_stack:
            raise UnconvertibleRegex(f"unbalanced group in {p!r}")
        return "".join(out)

    def _folding(self) -> bool:
        return self.fold and self.sensitive_depth == 0

    def _letter(self, c: str) -> str:
        if self._folding() and c.isalpha() and c.lower() != c.upper():
            return f"[{c.lower()}{c.upper()}]"
        return c

    def _escape(self) -> str:
        p = self.p
        if self.i + 1 >= len(p):
            raise UnconvertibleRegex(f"trailing backslash in {p!r}")
        nxt = p[self.i + 1]
        self.i += 2
        if nxt == "A":
            return "^"
        if nxt == "Z":
            return "$"
        if nxt in "dDwWsSbBntrvf\\":
            return "\\" + nxt
        if nxt.isdigit():
            return "\\" + nxt  # a backreference (the patterns use \1-\9 only)
        if nxt.isalpha():
            raise UnconvertibleRegex(f"escape \\{nxt} in {p!r}")
        return "\\" + nxt  # an escaped punctuation character: the same in both

    def _group_open(self) -> str:
        p = self.p
        rest = p[self.i :]
        if rest.startswith("(?P<"):
            name = rest[4 : rest.index(">")]  # copied as it is: never case-folded
            self.i += 4 + len(name) + 1
            self.group_stack.append(False)
            return f"(?<{name}>"
        for prefix, js in (("(?:", "(?:"), ("(?=", "(?="), ("(?!", "(?!")):
            if rest.startswith(prefix):
                self.i += len(prefix)
                self.group_stack.append(False)
                return js
        for prefix in ("(?<=", "(?<!"):
            if rest.startswith(prefix):
                self.i += len(prefix)
                self.group_stack.append(False)
                return prefix
        if rest.startswith("(?-i:"):
            if not self.fold:
                raise UnconvertibleRegex(f"(?-i:) outside a case-blind pattern: {p!r}")
            self.i += len("(?-i:")
            self.group_stack.append(True)
            self.sensitive_depth += 1
            return "(?:"
        if rest.startswith("(?"):
            raise UnconvertibleRegex(f"group syntax {rest[:5]!r} in {p!r}")
        self.i += 1
        self.group_stack.append(False)
        return "("

    def _char_class(self) -> str:
        """One ``[...]``: copied, with a leading ``]`` escaped and, when folding, both cases."""
        p = self.p
        self.i += 1
        head = "["
        if p[self.i : self.i + 1] == "^":
            head += "^"
            self.i += 1
        items: list[str] = []
        letters: set[str] = set()
        first = True
        while True:
            if self.i >= len(p):
                raise UnconvertibleRegex(f"unterminated class in {p!r}")
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "\\":
                esc = p[self.i : self.i + 2]
                self.i += 2
                if esc[1] in "AZ" or (esc[1].isalpha() and esc[1] not in "dDwWsSntrvf"):
                    raise UnconvertibleRegex(f"class escape {esc!r} in {p!r}")
                items.append(esc)
                continue
            if c == "[":
                items.append("\\[")
                self.i += 1
                continue
            if c == "]":
                items.append("\\]")
                self.i += 1
                continue
            # A range a-z (the "-" not last), else one character.
            if p[self.i + 1 : self.i + 2] == "-" and p[self.i + 2 : self.i + 3] not in ("]", ""):
                low, high = c, p[self.i + 2]
                if high == "\\":
                    raise UnconvertibleRegex(f"range to an escape in {p!r}")
                items.append(f"{low}-{high}")
                letters.update(
                    chr(code) for code in range(ord(low), ord(high) + 1) if chr(code).isalpha()
                )
                self.i += 3
                continue
            items.append("\\-" if c == "-" else c)
            if c.isalpha():
                letters.add(c)
            self.i += 1
        if self._folding():
            for letter in sorted(letters):
                other = letter.swapcase()
                if other != letter and other not in letters and len(other) == 1:
                    items.append(other)
        return head + "".join(items) + "]"


def _re(regex: re.Pattern[str]) -> list[str]:
    return list(to_js(regex.pattern, regex.flags))


def _src(pattern: str, flags: int = 0) -> list[str]:
    return list(to_js(pattern, flags))


def export() -> dict[str, Any]:
    """Every rule's data, as the TypeScript redactor reads it."""
    table = redaction_patterns.read_detect_secrets()
    compiled = redaction_patterns.compile_patterns(table)
    valid_names = {
        redaction_patterns.jwt_formally_valid: "jwt",
        rules.is_bootstrap_token: "bootstrap",
    }
    tails = {
        redaction_patterns.TOKEN_TAIL_RE.pattern: "token",
        redaction_patterns.JWT_TAIL_RE.pattern: "jwt",
    }
    tokens = [
        {
            "kind": p.kind,
            "re": _re(p.regex),
            "tail": tails[p.tail.pattern] if p.tail is not None else None,
            "word_start": p.word_start,
            "valid": valid_names[p.valid] if p.valid is not None else None,
        }
        for p in compiled.tokens
    ]
    keyword = []
    for regex, group in compiled.keyword:
        found = keyword_regexes._LEADING_KEYWORD_RE.match(regex.pattern)
        leading = _src(found.group(1), regex.flags) if found else None
        keyword.append({"re": _re(regex), "group": group, "leading": leading})
    named: dict[str, re.Pattern[str]] = {
        "token_tail": redaction_patterns.TOKEN_TAIL_RE,
        "jwt_tail": redaction_patterns.JWT_TAIL_RE,
        "keyword_root": keyword_regexes.KEYWORD_ROOT_RE,
        "existing_marker": redaction._EXISTING_MARKER_RE,
        "private": redaction._PRIVATE_RE,
        "strong_name": redaction._STRONG_NAME_RE,
        "open_key_name": redaction._OPEN_KEY_NAME_RE,
        "assign": redaction._ASSIGN_RE,
        "prose": redaction._PROSE_RE,
        "line_start": redaction._LINE_START_RE,
        "rest_of_line_blank": redaction._REST_OF_LINE_BLANK_RE,
        "dotted_path": redaction._DOTTED_PATH_RE,
        "secret_root": redaction._SECRET_ROOT_RE,
        "words_identifier": redaction._WORDS_IDENTIFIER_RE,
        "header_name": redaction._HEADER_NAME_RE,
        "short_word": redaction._SHORT_WORD_RE,
        "field_name": redaction._FIELD_NAME_RE,
        "not_secret_suffix": redaction._NOT_SECRET_SUFFIX_RE,
        "word": redaction._WORD_RE,
        "auth_header": redaction._AUTH_HEADER_RE,
        "bearer": redaction._BEARER_RE,
        "url_password": redaction._URL_PASSWORD_RE,
        "netrc": rules._NETRC_RE,
        "netrc_inline": rules._NETRC_INLINE_RE,
        "netrc_host": rules._NETRC_HOST_RE,
        "netrc_rest": rules._NETRC_REST_RE,
        "docker_auth": rules._DOCKER_AUTH_RE,
        "b64_pem": rules._B64_PEM_RE,
        "mysql": rules._MYSQL_RE,
        "cli_p": rules._CLI_P_RE,
        "redis_cli": rules._REDIS_CLI_RE,
        "telegram_url": rules._TELEGRAM_URL_RE,
        "sas_sig": rules._SAS_SIG_RE,
        "long_flag": rules._LONG_FLAG_RE,
        "literal": rules._LITERAL_RE,
        "digest_prefix": rules._DIGEST_PREFIX_RE,
        "lower_run": rules._LOWER_RUN_RE,
        "random_value": rules._RANDOM_VALUE_RE,
        "hex": rules._HEX_RE,
        "pem_end": private_keys._PEM_END_RE,
        "pem_header_tail": private_keys._PEM_HEADER_TAIL_RE,
        "pem_newline": private_keys._NEWLINE_RE,
        "pem_rest_of_line": private_keys._PEM_REST_OF_LINE_RE,
        "pem_body_line": private_keys._PEM_BODY_LINE_RE,
    }
    return {
        "version": FORMAT_VERSION,
        "generated_by": "python -m memlane.hosts.pi.redaction_js",
        "tokens": tokens,
        "private_key_headers": [_re(h) for h in compiled.private_key_headers],
        "keyword": keyword,
        "regex": {name: _re(regex) for name, regex in named.items()},
        "words": {
            "type_names": sorted(redaction._TYPE_NAMES),
            "non_secret_values": sorted(redaction._NON_SECRET_VALUES),
            "code_words": sorted(redaction._CODE_WORDS),
            "generic_kinds": sorted(redaction._GENERIC_KINDS),
        },
        "flag_kinds": dict(sorted(rules._FLAG_KINDS.items())),
        "numbers": {
            "max_rounds": redaction._MAX_ROUNDS,
            "prose_min_chars": redaction._PROSE_MIN_CHARS,
            "key_min_chars": redaction._KEY_MIN_CHARS,
            "min_literal_chars": rules.MIN_LITERAL_CHARS,
            "entropy_share": rules.ENTROPY_SHARE,
            "word_share": rules.WORD_SHARE,
            "named_entropy_share": rules.NAMED_ENTROPY_SHARE,
            "word_vowel_share": rules.WORD_VOWEL_SHARE,
        },
        "sentence_end": redaction._SENTENCE_END,
        "alnum_before": "".join(sorted(redaction._ALNUM_BEFORE)),
        "file_magic": [list(magic) for magic in rules.FILE_MAGIC],
        "private_marker": redaction.PRIVATE_MARKER,
        "unscannable": redaction.UNSCANNABLE,
    }


FILE = package_data.DataFile(EXPORT_NAME, export)
render = FILE.render
package_file = FILE.path
main = FILE.main


if __name__ == "__main__":
    raise SystemExit(main())
