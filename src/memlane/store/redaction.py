"""Secret redaction: nothing secret reaches the store or the LLM.

``redact(text)`` runs before distillation and before every write. The pattern
set is Yelp's detect-secrets (its regex plugins and its keyword table), used
on arbitrary text rather than files; ADR 0006 says why and what it misses,
and docs/hardening/secrets.md ("What memlane adds") lists the rules added
here and in redaction_rules.py for those gaps (private blocks, whole key
blocks, unquoted assignments, key-like names with generated values, secret
words in prose, URL passwords, headers, newer token formats).

Only the secret value is replaced (``KEY=[REDACTED:kind]``, a URL keeps scheme,
user and host), everything else stays byte-identical. Existing markers are
never matched again, so redacting twice is a no-op. ``redact`` never raises:
on an internal failure it fails closed (the whole text is withheld).

detect-secrets' patterns are read out of it once and kept in a cache
(redaction_patterns.py): a process that redacts compiles them without
importing detect-secrets and the ``requests`` it pulls in (~0.2 s of CPU).

Fault hook: inside ``with scanner_failure():`` every scan fails as a scanner
bug would, so the fail-closed paths (``redact`` withholds the whole text,
``redact_for_storage`` refuses the write) can be exercised for real.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memlane.store import redaction_rules as rules
from memlane.store.keyword_regexes import KEYWORD_ROOT_RE, keyword_matches
from memlane.store.private_keys import private_key_blocks
from memlane.store.redaction_patterns import Pattern, PatternSet, pattern_set

PRIVATE_MARKER = "[private]"
MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True)
class Redaction:
    """The redacted text, how many secrets were replaced, and their kinds (sorted, unique)."""

    text: str
    count: int
    kinds: tuple[str, ...]


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


UNSCANNABLE = "unscannable"


def redaction_notice(count: int) -> str:
    """What a write says when it replaced secrets (``memlane write``, ``topic add``, MCP)."""
    return f"{count} secret(s) were redacted before saving."


def redact_for_storage(text: str) -> str:
    """``redact(text).text``, or a ``StoreError`` when the text could not be scanned."""
    return redaction_for_storage(text).text


def redaction_for_storage(text: str) -> Redaction:
    """``redact(text)``, or a ``StoreError`` when the text could not be scanned.

    For text going to the LLM, withholding everything is the safe failure;
    for text the user asked to keep, replacing it with a marker would lose
    it, so the write is refused instead and nothing is stored.
    """
    result = redact(text)
    if result.kinds == (UNSCANNABLE,):
        from memlane.core.errors import StoreError

        raise StoreError(
            "the text could not be scanned for secrets, so it was not written",
            "this is a memlane bug or a broken detect-secrets install; reinstall memlane",
        )
    return result


def redact(text: str) -> Redaction:
    """Replace every secret in *text* by ``[REDACTED:<kind>]`` and drop ``<private>`` blocks."""
    try:
        if _injected_failures:
            raise _injected_failures[-1]
        if len(text) >= SETTLED_MIN_CHARS:
            settled = _settled_result(text)
            if settled is not None:
                return settled
        result = _redact(text)
    except Exception:  # a scanner bug must not let the secret through, nor stop capture
        return Redaction(marker(UNSCANNABLE), 1, (UNSCANNABLE,))
    if len(result.text) >= SETTLED_MIN_CHARS:
        _settle(result)
    return result


# The last few long texts ``redact`` returned. Its result is a fixed point (redacting
# it again changes nothing), so one of them handed back is returned as it is, for the
# cost of a comparison: the engine scans a memory_write's text before the project's
# worker takes the call (engine/tools/dispatch.py: ``prepare_call``), and the write's
# own scan in ``Memory.write`` then finds it here instead of spending seconds again.
# It comes back with the count and kinds of the scan that produced it: that write
# still reports how many secrets were redacted.
SETTLED_MIN_CHARS = 64 * 1024
_SETTLED_KEPT = 4
_settled: collections.deque[Redaction] = collections.deque(maxlen=_SETTLED_KEPT)
_settled_lock = threading.Lock()


def _settled_result(text: str) -> Redaction | None:
    with _settled_lock:
        return next((known for known in _settled if known.text == text), None)


def _settle(result: Redaction) -> None:
    with _settled_lock:
        if not any(known.text == result.text for known in _settled):
            _settled.append(result)


# Errors of active ``scanner_failure`` blocks; the innermost is raised.
_injected_failures: list[Exception] = []
_injected_lock = threading.Lock()


@contextlib.contextmanager
def scanner_failure(error: Exception | None = None) -> Iterator[None]:
    """Make every scan inside the block fail as a scanner bug would (a fault hook).

    While active (process-wide: every thread), ``redact`` raises *error*
    (default ``RuntimeError("injected scanner failure")``) inside its scan
    and so fails closed: ``redact`` returns only the ``unscannable`` marker
    and ``redact_for_storage`` raises ``StoreError``. For tests of those
    paths; nothing in memlane enters it.
    """
    injected = error if error is not None else RuntimeError("injected scanner failure")
    with _injected_lock:
        _injected_failures.append(injected)
    try:
        yield
    finally:
        with _injected_lock:
            _injected_failures.remove(injected)


# --- own complements (see module docstring / ADR 0006) -------------------------------------

_EXISTING_MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]|\[private\]")
_PRIVATE_RE = re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL)

_SECRET_WORD = (
    r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|auth[_-]?key|client[_-]?key|credentials?)"
)
# A secret-sounding name ends in the secret word (MAX_TOKENS and TOKENIZER do not).
_STRONG_NAME = (
    rf"(?:[A-Za-z0-9_.-]*?{_SECRET_WORD}(?:[_.-]?(?:key|base)){{0,2}}"
    r"|(?:[A-Za-z0-9_.-]*[_.-])?pass)"
)
# A key-like name (ENCRYPTION_KEY, ALGOLIA_ADMIN_KEY, APP_KEY) says less: a
# sort key or a cache key is no secret, so its value must look generated.
_KEY_NAME = (
    r"(?:[A-Za-z0-9_.-]*(?:[_.-]|(?-i:[a-z0-9](?=Key))))?keys?(?:[_.-]?base)?"  # encryptionKey too
)
_STRONG_NAME_RE = re.compile(_STRONG_NAME, re.IGNORECASE)
# Keys that name or find things, or are published on purpose: never secrets.
_OPEN_KEY_NAME_RE = re.compile(
    r"(?:pub|public|publishable|cache|sort|primary|foreign|partition|idempotency|dedup|lookup"
    r"|hash|object|s3|row|index|routing|shard|group|order|unique|composite|natural|surrogate"
    r"|map|dict|lock|message|i18n|translation|bucket|file)[_.-]?keys?(?:[_.-]?base)?\Z",
    re.IGNORECASE,
)
_ASSIGN_RE = re.compile(
    rf"(?<![A-Za-z0-9_.$-])[\"']?(?P<name>{_STRONG_NAME}|{_KEY_NAME})[\"']?[ \t]*"
    r"(?P<op>:=|=>|=(?!=)|:)[ \t]*"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`,;&()<>\[\]{}]+))",
    re.IGNORECASE,
)
# A secret word in prose, then its value: "the password is Xk2…", "token Xk2…".
_PROSE_RE = re.compile(
    rf"(?<![A-Za-z0-9_.$-])(?P<name>{_SECRET_WORD})[ \t]+(?:(?:is|was|of|=)[ \t]+)?"
    r"(?P<v>[^\s\"'`,;&()<>\[\]{}]+)",
    re.IGNORECASE,
)
# Sentence punctuation after a value in prose ends the sentence, not the value.
_SENTENCE_END = ".,!?:"
# In prose a value is a secret only when it looks generated and is this long.
_PROSE_MIN_CHARS = 10
_KEY_MIN_CHARS = 16
_LINE_START_RE = re.compile(r"[ \t]*(?:[-*][ \t]+)?(?:export[ \t]+)?[\"']?\Z")
_REST_OF_LINE_BLANK_RE = re.compile(r"[ \t]*[;,]?[ \t]*(?:#[^\r\n]*)?\r?(?:\n|\Z)")
_DOTTED_PATH_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_TYPE_NAMES = frozenset(
    {"str", "string", "bytes", "int", "integer", "bool", "boolean", "float", "number", "any"}
)
_NON_SECRET_VALUES = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_SECRET_ROOT_RE = re.compile(r"pass|pwd|secret|token|key|cred", re.IGNORECASE)
# What follows "=" in code and starts an expression, not a value: token = await get_token().
_CODE_WORDS = frozenset(
    {"await", "new", "yield", "lambda", "async", "not", "typeof", "function", "require"}
)
# An unquoted identifier of words: a variable (token = user_input, password = newPassword).
_WORDS_IDENTIFIER_RE = re.compile(r"[a-z]+(?:_[a-z]+)+|[a-z]+(?:[A-Z][a-z]+)+")
# A header name (X-API-Key, Proxy-Authorization) or a short word ("admin", "none").
_HEADER_NAME_RE = re.compile(r"[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)+|Authorization")
_SHORT_WORD_RE = re.compile(r"[A-Za-z]{1,5}")
# A quoted name of a field or storage key: TOKEN_KEY = "auth_token".
_FIELD_NAME_RE = re.compile(
    r"[a-z]+(?:[_-][a-z]+)*[_-](?:token|key|secret|password|passwd|pwd|credentials?)"
)
# A keyword-table name ending in one of these names a secret's header, file,
# variable or shape, not the secret: api_key_header, DB_PASSWORD_FILE, token_type.
_NOT_SECRET_SUFFIX_RE = re.compile(
    r"(?:pass|pwd|secret|token|key|cred|credentials?)[_.-]?(?:header|headers|name|names|field"
    r"|env|var|variable|path|file|dir|url|uri|endpoint|prefix|suffix|type|kind|length|len"
    r"|size|count|policy|format|pattern|regex|label|hint|prompt|placeholder|ttl|timeout"
    r"|expiry|expires|param|arg|attr|column|query|location|mode|scope|scopes|version"
    r"|enabled|required|min|max)s?\Z",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"\w+")

_AUTH_HEADER_RE = re.compile(
    r"\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:[A-Za-z][A-Za-z0-9_-]{1,24}[ \t]+)?(?P<v>[A-Za-z0-9._~+/=:-]{8,})",
    re.IGNORECASE,
)
_BEARER_RE = re.compile(r"\bbearer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)", re.IGNORECASE)

# Userinfo in any scheme's URL. The password may hold '@' or reserved characters (people
# paste them unencoded); it runs to the last '@' before the host.
_URL_PASSWORD_RE = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@?#]*:(?P<v>[^\s/?#]+)@(?=[^\s@/?#]*[A-Za-z0-9])"
)

_ALNUM_BEFORE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LINE_RE = re.compile(r"[^\n]*\n?")
_BLANK_RE = re.compile(r"\s")
_MAX_ROUNDS = 8

# Specific formats win a tie over generic assignments when spans merge.
_GENERIC_KINDS = frozenset(
    {"password", "secret", "token", "api-key", "bearer-token", "high-entropy"}
)


# --- the scan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SecretSpan:
    start: int
    end: int
    kind: str


def _redact(text: str) -> Redaction:
    kinds: list[str] = []
    # A replacement can expose a secret a neighbour hid (a pattern that must not start
    # inside a word now starts after "]"): rescan until nothing changes, so that the
    # result is a fixed point and redacting it again is a no-op. Clean text scans once.
    for _ in range(_MAX_ROUNDS):
        text, found = _redact_once(text)
        kinds.extend(found)
        if not found:
            return Redaction(text, len(kinds), tuple(sorted(set(kinds))))
    raise RuntimeError("redaction did not settle")  # fails closed in redact()


def _redact_once(text: str) -> tuple[str, list[str]]:
    text, dropped = _PRIVATE_RE.subn(PRIVATE_MARKER, text)
    kinds = ["private"] * dropped
    patterns = pattern_set()
    text, keys = _replace(text, _private_key_blocks(text, patterns.private_key_headers))
    kinds.extend(keys)
    text, found = _replace(text, _secret_spans(text, patterns))
    kinds.extend(found)
    return text, kinds


def _replace(text: str, spans: Iterable[SecretSpan]) -> tuple[str, list[str]]:
    merged = _merge(spans)
    if not merged:
        return text, []
    out: list[str] = []
    pos = 0
    for span in merged:
        out.append(text[pos : span.start])
        out.append(marker(span.kind))
        pos = span.end
    out.append(text[pos:])
    return "".join(out), [span.kind for span in merged]


def _merge(spans: Iterable[SecretSpan]) -> list[SecretSpan]:
    """Union of overlapping spans: a secret two patterns disagree about is never half-kept."""
    merged: list[SecretSpan] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if span.end <= span.start:
            continue
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            kind = last.kind
            if kind in _GENERIC_KINDS and span.kind not in _GENERIC_KINDS:
                kind = span.kind
            merged[-1] = SecretSpan(last.start, max(last.end, span.end), kind)
        else:
            merged.append(span)
    return merged


def _private_key_blocks(text: str, headers: tuple[re.Pattern[str], ...]) -> Iterator[SecretSpan]:
    for start, end in private_key_blocks(text, headers):
        yield SecretSpan(start, end, "private-key")


def _secret_spans(text: str, patterns: PatternSet) -> list[SecretSpan]:
    taken = [(m.start(), m.end()) for m in _EXISTING_MARKER_RE.finditer(text)]
    spans = [
        *_token_spans(text, patterns.tokens),
        *_keyword_spans(text, patterns.keyword),
        *_assignment_spans(text),
        *_header_spans(text),
        *_group_spans(_URL_PASSWORD_RE, text, "v", "password"),
        *(SecretSpan(*span) for span in rules.context_spans(text, _looks_secret)),
        *(SecretSpan(*span) for span in rules.high_entropy_literals(text, _holds_secret)),
        # Last: of two spans alike, the first kept names the kind, and a
        # header or an assignment names it better than a word in prose.
        *_prose_spans(text),
    ]
    return clear_of(spans, taken)


def clear_of(spans: list[SecretSpan], taken: list[tuple[int, int]]) -> list[SecretSpan]:
    """The spans that overlap none of *taken* (markers: in order, never overlapping).

    A binary search per span: comparing each span with every marker took
    minutes for a pasted log of many redacted lines.
    """
    ends = [end for _, end in taken]
    clear = []
    for span in spans:
        # The first marker ending after the span starts is the only one that may overlap it.
        first = bisect.bisect_right(ends, span.start)
        if first == len(taken) or taken[first][0] >= span.end:
            clear.append(span)
    return clear


def _token_spans(text: str, tokens: tuple[Pattern, ...]) -> Iterator[SecretSpan]:
    for pattern in tokens:
        for match in pattern.regex.finditer(text):
            group = next((i for i in range(1, len(match.groups()) + 1) if match.group(i)), 0)
            start, end = match.span(group)
            if group == 0:
                # Some plugins match their delimiters too (artifactory: whitespace, quotes).
                value = match.group()
                start += len(value) - len(value.lstrip(" \t\r\n\"'=:"))
                end -= len(value) - len(value.rstrip(" \t\r\n\"'"))
            if pattern.word_start and start > 0 and text[start - 1] in _ALNUM_BEFORE:
                continue
            if pattern.valid is not None and not pattern.valid(text[start:end]):
                continue
            if pattern.tail is not None:
                end = pattern.tail.match(text, end).end()  # type: ignore[union-attr]
            # A token has no blank in it; a pattern ending in ".+" (npm's
            # .npmrc line) would take the rest of the sentence along.
            blank = _BLANK_RE.search(text, start, end)
            if blank is not None:
                end = blank.start()
            yield SecretSpan(start, end, pattern.kind)


def _keyword_spans(
    text: str, table: tuple[tuple[re.Pattern[str], int], ...]
) -> Iterator[SecretSpan]:
    # Per line: the keyword regexes' "[^\v'\"]" spans newlines in Python's re.
    for line in _LINE_RE.finditer(text):
        # Each keyword regex needs a keyword; one cheap search skips the lines without
        # (most of a long text), instead of five slow case-blind alternations at every
        # character: a 3 MB write spent half its time here.
        if not KEYWORD_ROOT_RE.search(line.group()):
            continue
        for regex, group in table:
            for match in keyword_matches(regex, line.group()):
                value = match.group(group)
                if value is None or not _looks_secret(value):
                    continue
                start, end = match.span(group)
                around = match.string[match.start() : start] + match.string[end : match.end()]
                if any(_NOT_SECRET_SUFFIX_RE.search(w) for w in _WORD_RE.findall(around)):
                    continue
                yield SecretSpan(line.start() + start, line.start() + end, _kind_of(around))


def _assignment_spans(text: str) -> Iterator[SecretSpan]:
    for match in _ASSIGN_RE.finditer(text):
        name = match.group("name")
        for group in ("dq", "sq", "bare"):
            if match.group(group) is not None:
                break
        value = match.group(group)
        start, end = match.span(group)
        strong = bool(_STRONG_NAME_RE.fullmatch(name))
        if group == "bare":
            if _is_code(value, text, end):
                continue
            if value.isdigit() and "token" in name.lower():
                continue  # token budgets and counts, not credentials
            if match.group("op") == ":" and not _is_config_line(text, match.start(), end):
                # "password: Xk2…" in a sentence: only a value that looks generated
                # (a bare "key: …" in prose names nothing secret).
                if name.lower() in ("key", "keys"):
                    continue
                value = value.rstrip(_SENTENCE_END)
                end = start + len(value)
                if not rules.looks_random(value, _PROSE_MIN_CHARS):
                    continue
        if not _looks_secret(value):
            continue
        if not strong and (
            _OPEN_KEY_NAME_RE.search(name)
            or not rules.looks_random(value.rstrip(_SENTENCE_END), _KEY_MIN_CHARS)
        ):
            continue
        yield SecretSpan(start, end, _kind_of(name))


def _prose_spans(text: str) -> Iterator[SecretSpan]:
    """A secret word, then a generated-looking value: "the password is Xk2…"."""
    for match in _PROSE_RE.finditer(text):
        value = match.group("v").rstrip(_SENTENCE_END)
        start = match.start("v")
        if _is_code(value, text, match.end("v")) or not _looks_secret(value):
            continue
        if rules.looks_random(value, _PROSE_MIN_CHARS):
            yield SecretSpan(start, start + len(value), _kind_of(match.group("name")))


def _is_config_line(text: str, start: int, end: int) -> bool:
    """``key: value`` unquoted counts only as a YAML/INI line of its own, not in prose."""
    line_start = text.rfind("\n", 0, start) + 1
    return bool(
        _LINE_START_RE.match(text[line_start:start]) and _REST_OF_LINE_BLANK_RE.match(text, end)
    )


def _is_code(value: str, text: str, end: int) -> bool:
    if end < len(text) and text[end] in "([":
        return True  # a call or subscript: os.environ["X"], get_token()
    if _DOTTED_PATH_RE.fullmatch(value):
        return True  # attribute access: self.token, settings.SECRET_KEY
    if value.lower() in _TYPE_NAMES:
        return True  # annotations: token: str
    if value in _CODE_WORDS or _WORDS_IDENTIFIER_RE.fullmatch(value):
        return True
    # token=token, api_key=api_key, password=new_password: a variable, not a value.
    return value.isidentifier() and bool(_SECRET_ROOT_RE.search(value))


def _looks_secret(value: str) -> bool:
    if not any(c.isalnum() for c in value):
        return False  # "", "***", "..."
    if value.lower() in _NON_SECRET_VALUES:
        return False
    if _HEADER_NAME_RE.fullmatch(value) or _SHORT_WORD_RE.fullmatch(value):
        return False
    if _FIELD_NAME_RE.fullmatch(value):
        return False
    # References and placeholders: $VAR, ${VAR}, {{ var }}, %(var)s, <your-token>, [PAD],
    # memlane's own "env:VAR" (core/config), and markers of an earlier redaction.
    return not value.startswith(("$", "{{", "%(", "<", "[", "env:"))


def _holds_secret(text: str) -> bool:
    """Whether *text* (say, decoded base64) holds anything ``redact`` would replace."""
    return bool(_redact_once(text)[1])


def _header_spans(text: str) -> Iterator[SecretSpan]:
    for regex in (_AUTH_HEADER_RE, _BEARER_RE):
        for span in _group_spans(regex, text, "v", "bearer-token"):
            value = text[span.start : span.end]
            # Prose ("the bearer of bad news") has no digits; tokens do.
            if any(c.isdigit() for c in value) and _looks_secret(value):
                yield span


def _group_spans(regex: re.Pattern[str], text: str, group: str, kind: str) -> Iterator[SecretSpan]:
    for match in regex.finditer(text):
        if not match.group(group).startswith("[REDACTED:"):
            yield SecretSpan(*match.span(group), kind)


def _kind_of(name: str) -> str:
    lowered = name.lower()
    if "pass" in lowered or "pwd" in lowered or "contras" in lowered:
        return "password"
    if "token" in lowered:
        return "token"
    if "aws" in lowered and "secret" in lowered:
        return "aws-secret-key"
    if "secret" in lowered:
        return "secret"
    if "key" in lowered:
        return "api-key"
    return "secret"
