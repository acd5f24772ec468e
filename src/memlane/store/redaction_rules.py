"""memlane's own secret rules, beyond detect-secrets' patterns (ADR 0006).

``store/redaction.py`` runs detect-secrets' plugin regexes and keyword table;
this module holds what they miss, as data plus a few small span finders:

- ``OWN_TOKENS``: provider token formats with a distinctive prefix that
  detect-secrets 1.5 does not know (Hugging Face, Shopify, DigitalOcean,
  Google OAuth, Azure AD, Vault, ...), and the kubeadm bootstrap token;
- ``context_spans``: secrets recognisable only by where they stand:
  ``.netrc`` ``password`` lines, Docker config ``"auth"`` values, base64 of
  a PEM private key (kubeconfig ``client-key-data``), passwords on the
  command line of ``mysql -p…``, ``sshpass -p``, ``redis-cli -a``,
  ``docker login -p`` and ``--password <value>`` flags;
- ``high_entropy_literal``: a quoted value with no keyword at all, judged by
  length, character mix, entropy and how word-like the letters are
  (the rule and its numbers are ADR 0006's "High-entropy literals").

Every finder returns ``(start, end, kind)`` spans of the secret value only;
the caller merges, replaces and never re-matches its own markers.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator

Span = tuple[int, int, str]

# (kind, regex). Matched where the token does not continue a word; the
# caller extends a match to the end of the token so no tail is kept.
OWN_TOKENS: tuple[tuple[str, str], ...] = (
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai-key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}"),
    ("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_-]{28}"),
    ("google-oauth-token", r"ya29\.[A-Za-z0-9_-]{20,}"),
    ("google-oauth-token", r"1//0[A-Za-z0-9_-]{40,}"),
    ("azure-client-secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}"),
    ("huggingface-token", r"api_org_[A-Za-z0-9]{30,}"),
    ("shopify-token", r"shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{32}"),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("stripe-key", r"(?:sk|rk)_test_[0-9a-zA-Z]{24,}"),
    ("stripe-webhook-secret", r"whsec_[A-Za-z0-9]{32,}"),
    ("mailgun-key", r"key-[0-9a-f]{32}"),
    ("heroku-key", r"HRKU-[A-Za-z0-9_-]{40,}"),
    ("atlassian-token", r"ATATT3[A-Za-z0-9_=-]{100,}"),
    ("linear-key", r"lin_api_[A-Za-z0-9]{40}"),
    ("databricks-token", r"dapi[a-f0-9]{32}"),
    ("vault-token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("grafana-token", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}"),
    ("grafana-token", r"glc_[A-Za-z0-9+/]{32,}={0,2}"),
    ("newrelic-key", r"NRAK-[A-Z0-9]{27}"),
    ("pulumi-token", r"pul-[a-f0-9]{40}"),
    ("terraform-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}"),
    ("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("supabase-token", r"sbp_[a-f0-9]{40}"),
    ("sentry-token", r"sntry[su]_[A-Za-z0-9+/=_-]{40,}"),
    ("flyio-token", r"fo1_[A-Za-z0-9_-]{40,}"),
    ("square-token", r"sq0(?:atp|idp|csp)-[A-Za-z0-9_-]{22,}"),
    # The legacy Firebase Cloud Messaging server key: "AAAA" + 7, ":APA91b" + 134.
    ("firebase-key", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}"),
    ("slack-token", r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}"),
    ("dockerhub-token", r"dckr_pat_[A-Za-z0-9_-]{27,}"),
    ("planetscale-token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}"),
    ("rubygems-key", r"rubygems_[a-f0-9]{48}"),
)

# kubeadm bootstrap token: [a-z0-9]{6}.[a-z0-9]{16}. It looks like a dotted
# name (``ce6a3p.slvphp9puoa1c9r8``), so it needs a digit and must not be part
# of a longer dotted path (``module.attribute.more``).
# A full stop right after it ends a sentence, not the token.
BOOTSTRAP_TOKEN = r"(?<![\w.-])[a-z0-9]{6}\.[a-z0-9]{16}(?![\w-]|\.\w)"


def is_bootstrap_token(value: str) -> bool:
    return any(c.isdigit() for c in value)


# --- context rules ---------------------------------------------------------------------------

_VALUE = r"(?:'(?P<sq>[^'\n]*)'|\"(?P<dq>[^\"\n]*)\"|(?P<bare>[^\s'\"]+))"

# .netrc: "machine <host> login <user> password <p>", on one line or spread
# over lines ("  password <p>" under the machine line). Prose ("machine
# learning ... password reset") is told apart by the host (a dot, a colon or
# localhost) or, for a line without one, by a value that is not a plain word.
_NETRC_RE = re.compile(
    r"^[ \t]*(?P<lead>(?:(?:machine|login|account|port)[ \t]+\S+[ \t]+|default[ \t]+)*)"
    r"password[ \t]+(?P<v>\S+)(?P<rest>[^\n]*)",
    re.MULTILINE,
)
# The one-line form anywhere in a line ("add this to ~/.netrc: machine …").
_NETRC_INLINE_RE = re.compile(
    r"\bmachine[ \t]+(?:\S*[.:]\S*|localhost)(?:[ \t]+(?:login|account|port)[ \t]+\S+)*"
    r"[ \t]+password[ \t]+(?P<v>\S+)"
)
_NETRC_HOST_RE = re.compile(r"(?:^|\s)machine[ \t]+(?:\S*[.:]\S*|localhost)(?:\s|$)")
_NETRC_REST_RE = re.compile(r"(?:[ \t]+(?:machine|login|account|port)[ \t]+\S+)*[ \t]*\r?")

# Docker's config.json: "auth" is base64("user:password"); identity and
# registry tokens are opaque credentials.
_DOCKER_AUTH_RE = re.compile(
    r"\"(?P<key>auth|identitytoken|registrytoken)\"[ \t]*:[ \t]*\"(?P<v>[^\"\s]{8,})\"",
    re.IGNORECASE,
)

# base64 of "-----BEGIN ": a PEM block encoded once more (kubeconfig
# client-key-data, Kubernetes secrets); only a private key counts.
_B64_PEM_RE = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}")

# Passwords typed on a command line.
_MYSQL_RE = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump)?)\b"
    r"[^\n|;&]*?(?<=[ \t])-p" + _VALUE
)
_CLI_P_RE = re.compile(
    r"\b(?:sshpass|(?:docker|podman|helm|buildah|skopeo)[ \t]+login|mongo(?:sh|dump|restore)?)\b"
    r"[^\n|;&]*?[ \t]-p[ \t]+" + _VALUE
)
_REDIS_CLI_RE = re.compile(r"\bredis-cli\b[^\n|;&]*?[ \t]-a[ \t]+" + _VALUE)
# A Telegram bot token inside its API URL (the plugin's pattern must not
# start inside a word, and "bot" precedes it here).
_TELEGRAM_URL_RE = re.compile(r"/bot(?P<v>\d{8,10}:[0-9A-Za-z_-]{35})")
# Azure shared access signatures: the signature of a SAS URL or token.
_SAS_SIG_RE = re.compile(r"[?&]sig=(?P<v>[A-Za-z0-9%+/=]{20,})")
_LONG_FLAG_RE = re.compile(
    r"(?<![\w-])--(?P<flag>password|passwd|pass|token|api-key|apikey|secret|client-secret"
    r"|auth-token|access-token)[ \t]+" + _VALUE
)

_FLAG_KINDS = {"token": "token", "auth-token": "token", "access-token": "token"}
_FLAG_KINDS |= {"api-key": "api-key", "apikey": "api-key", "secret": "secret"}
_FLAG_KINDS["client-secret"] = "secret"


def context_spans(text: str, looks_secret: Callable[[str], bool]) -> Iterator[Span]:
    """Secrets known by where they stand; *looks_secret* weeds out placeholders."""
    for match in _NETRC_RE.finditer(text):
        value = match.group("v")
        if not looks_secret(value):
            continue
        if not _NETRC_HOST_RE.search(match.group("lead")):
            if not _NETRC_REST_RE.fullmatch(match.group("rest")):
                continue
            if value.isalpha() and (value.islower() or value.isupper() or value.istitle()):
                continue
        yield (*match.span("v"), "password")
    for match in _NETRC_INLINE_RE.finditer(text):
        if looks_secret(match.group("v")):
            yield (*match.span("v"), "password")
    for match in _DOCKER_AUTH_RE.finditer(text):
        value = match.group("v")
        if match.group("key").lower() == "auth":
            decoded = _b64decode(value)
            if decoded is None or b":" not in decoded:
                continue
        elif not (looks_secret(value) and any(c.isdigit() for c in value)):
            continue
        yield (*match.span("v"), "docker-auth")
    for match in _B64_PEM_RE.finditer(text):
        decoded = _b64decode(match.group()[: len(match.group()) // 4 * 4])
        if decoded is not None and b"PRIVATE KEY" in decoded[:80]:
            yield (*match.span(), "private-key")
    for regex in (_MYSQL_RE, _CLI_P_RE, _REDIS_CLI_RE):
        for match in regex.finditer(text):
            yield from _value_span(match, looks_secret, "password")
    for match in _TELEGRAM_URL_RE.finditer(text):
        yield (*match.span("v"), "telegram-token")
    for match in _SAS_SIG_RE.finditer(text):
        yield (*match.span("v"), "azure-sas")
    for match in _LONG_FLAG_RE.finditer(text):
        kind = _FLAG_KINDS.get(match.group("flag"), "password")
        yield from _value_span(match, looks_secret, kind)


def _value_span(
    match: re.Match[str], looks_secret: Callable[[str], bool], kind: str
) -> Iterator[Span]:
    for group in ("sq", "dq", "bare"):
        value = match.group(group)
        if value is None:
            continue
        if group == "bare" and value.startswith("-"):
            return  # the next flag: this one takes its value from a prompt or stdin
        if looks_secret(value):
            yield (*match.span(group), kind)
        return


def _b64decode(value: str) -> bytes | None:
    padded = value + "=" * (-len(value) % 4)
    for altchars in (None, b"-_"):
        try:
            return base64.b64decode(padded, altchars=altchars, validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


# --- high-entropy literals -------------------------------------------------------------------

# A quoted run of token characters: no spaces, dots or colons (prose, paths
# with extensions, URLs, versions and "sha256:…" digests never qualify).
# The quotes may be escaped, as in a JSON-encoded tool call (\"…\").
_LITERAL_RE = re.compile(r"(?<![\w\\])(\\?[\"'`])(?P<v>[A-Za-z0-9+/_-]{20,256}={0,2})\1(?![\w])")
_DIGEST_PREFIX_RE = re.compile(r"(?:sha(?:1|224|256|384|512)|md5|blake2b?)[-_]", re.IGNORECASE)
MIN_LITERAL_CHARS = 20
# Shannon entropy (bits per character) must reach this share of log2(length)
# (the most a string of that length can have), capped at 64 characters.
ENTROPY_SHARE = 0.8
# Identifiers made of words keep their lowercase letters in runs of 3 or more
# (handleOAuth2CallbackRequest: all of them); random base62 rarely does
# (measured: the share reaches 0.9 in ~1% of 20-character random strings).
WORD_SHARE = 0.9
_LOWER_RUN_RE = re.compile(r"[a-z]+")
# First bytes of file formats that code inlines as base64 (PNG, GIF, JPEG,
# PDF, zip, gzip, RIFF/WebP, WebAssembly).
FILE_MAGIC = (
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"\x00asm",
)


def high_entropy_literals(text: str, contains_secret: Callable[[str], bool]) -> Iterator[Span]:
    """Quoted values that look random enough to be credentials, with no keyword near."""
    for match in _LITERAL_RE.finditer(text):
        value = match.group("v")
        if is_random_looking(value, contains_secret):
            yield (*match.span("v"), "high-entropy")


def is_random_looking(value: str, contains_secret: Callable[[str], bool]) -> bool:
    if len(value) < MIN_LITERAL_CHARS or _DIGEST_PREFIX_RE.match(value):
        return False
    # Mixed case and digits: hex (SHAs, hashes, UUIDs), slugs, CONSTANT_NAMES fail.
    if not (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    ):
        return False
    if entropy(value) < ENTROPY_SHARE * math.log2(min(len(value), 64)):
        return False
    if word_share(value) >= WORD_SHARE:
        return False  # camelCase words: handleOAuth2CallbackRequest
    head = _b64decode(value[:16])
    if head is not None and head.startswith(FILE_MAGIC):
        return False  # an encoded image or archive, as test fixtures inline them
    decoded = _b64decode(value.rstrip("="))
    if decoded is not None and _is_text(decoded):
        # Base64 of text (a fixture, "Hello, World!"): a secret only if the
        # text holds one.
        return contains_secret(decoded.decode("ascii"))
    return True


def entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def word_share(value: str) -> float:
    """Share of the lowercase letters that sit in runs of three or more."""
    runs = [len(run) for run in _LOWER_RUN_RE.findall(value)]
    return sum(n for n in runs if n >= 3) / max(sum(runs), 1)


def _is_text(data: bytes) -> bool:
    """Printable ASCII only: what base64 of text decodes to (random bytes never do)."""
    return bool(data) and all(32 <= b < 127 or b in (9, 10, 13) for b in data)


# --- values after a secret-sounding name -----------------------------------------------------

# What a generated key, token or password is made of, with an optional
# encoding label (Laravel's APP_KEY=base64:…).
_RANDOM_VALUE_RE = re.compile(r"(?:base64:|hex:)?(?P<body>[A-Za-z0-9+/=_.~!#%^&*-]+)", re.I)
_HEX_RE = re.compile(r"[0-9a-fA-F-]+")
# For a value that stands after a key-like name (ENCRYPTION_KEY=…) or a secret
# word in prose ("the password is …"), entropy must reach this share of the
# most the value's length and alphabet allow: lower than for a quoted literal
# with no name at all, since the name already says "secret".
NAMED_ENTROPY_SHARE = 0.75
# Letters of words are ~40 % vowels; random letters 5 of 26 (19 %).
WORD_VOWEL_SHARE = 0.3
_VOWELS = frozenset("aeiouAEIOU")


def looks_random(value: str, min_chars: int) -> bool:
    """Whether *value* (one token, no spaces) looks generated rather than written.

    Generated: at least *min_chars* long, letters and digits, entropy near
    the most its alphabet allows (hex counts as a 16-letter alphabet, so
    hex keys qualify), and not made of words (``deploy-key-2024-rotation``,
    ``handleOAuth2Callback``). A secret-sounding name must stand before it:
    a hash alone (a git SHA) is not judged here.
    """
    match = _RANDOM_VALUE_RE.fullmatch(value)
    if match is None:
        return False
    body = match.group("body").rstrip("=")
    if len(body) < min_chars:
        return False
    if not (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
        return False
    if _HEX_RE.fullmatch(body):
        alphabet = 16
    elif body.lower() == body or body.upper() == body:
        alphabet = 36
    else:
        alphabet = 64
    if entropy(body) < NAMED_ENTROPY_SHARE * math.log2(min(len(body), alphabet)):
        return False
    return alphabet == 16 or not _is_words(body)


def _is_words(value: str) -> bool:
    letters = [c for c in value if c.isalpha()]
    vowels = sum(c in _VOWELS for c in letters) / len(letters)
    if value.lower() == value or value.upper() == value:
        return vowels >= WORD_VOWEL_SHARE
    return word_share(value) >= WORD_SHARE and vowels >= WORD_VOWEL_SHARE
