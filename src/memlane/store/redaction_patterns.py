"""The token patterns redaction.py scans with: detect-secrets' plugins, and ours.

Importing detect-secrets costs ~0.2 s of CPU (it pulls in requests and
urllib3, and every plugin compiles its regexes at import), which every short
process that redacts used to pay: 90 % of a ``memlane write`` was imports,
a fifth of it this one. Its regexes themselves compile in ~20 ms. So the
first process that redacts reads the patterns out of detect-secrets and
keeps their source in ``$MEMLANE_HOME/cache/redaction-patterns.json``;
later processes compile them from there without importing detect-secrets.

The cache is keyed by the files its content comes from (detect-secrets'
plugin modules and this module, by size and modification time), so a new
detect-secrets or a new memlane reads the patterns afresh. A missing, stale
or damaged cache is rebuilt from detect-secrets, and a cache that cannot be
written costs only the import again: the patterns are always exactly
detect-secrets' own. The JWT check (detect-secrets' ``is_formally_valid``)
is imported only when a JWT-shaped string is found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from memlane.store import redaction_rules as rules
from memlane.store.private_keys import ANY_PEM_KEY_HEADER_RE

TOKEN_TAIL_RE = re.compile(r"[A-Za-z0-9_-]*")
JWT_TAIL_RE = re.compile(r"[A-Za-z0-9_=-]*")
CACHE_FILE = "redaction-patterns.json"
_TAILS: dict[str, re.Pattern[str]] = {"token": TOKEN_TAIL_RE, "jwt": JWT_TAIL_RE}

#: (plugin module, detector class, kind, tail, word_start, validator) in scan order;
#: aws is split in two kinds below.
_PLUGINS: tuple[tuple[str, str, str, str | None, bool, str | None], ...] = (
    ("github_token", "GitHubTokenDetector", "github-token", "token", False, None),
    ("gitlab_token", "GitLabTokenDetector", "gitlab-token", "token", False, None),
    ("openai", "OpenAIDetector", "openai-key", "token", False, None),
    ("slack", "SlackDetector", "slack-token", "token", False, None),
    ("stripe", "StripeDetector", "stripe-key", "token", False, None),
    ("npm", "NpmDetector", "npm-token", None, False, None),
    ("jwt", "JwtTokenDetector", "jwt", "jwt", False, "jwt"),
    ("basic_auth", "BasicAuthDetector", "password", None, False, None),
    ("sendgrid", "SendGridDetector", "sendgrid-key", "token", False, None),
    ("twilio", "TwilioKeyDetector", "twilio-key", "token", True, None),
    ("discord", "DiscordBotTokenDetector", "discord-token", "token", True, None),
    ("pypi_token", "PypiTokenDetector", "pypi-token", "token", False, None),
    ("telegram_token", "TelegramBotTokenDetector", "telegram-token", "token", True, None),
    ("mailchimp", "MailchimpDetector", "mailchimp-key", "token", True, None),
    ("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key", None, False, None),
    ("artifactory", "ArtifactoryDetector", "artifactory-token", None, False, None),
    ("square_oauth", "SquareOAuthDetector", "square-oauth-secret", "token", False, None),
    ("ibm_cloud_iam", "IbmCloudIamDetector", "ibm-cloud-key", None, False, None),
    ("ibm_cos_hmac", "IbmCosHmacDetector", "ibm-cos-key", None, False, None),
    ("cloudant", "CloudantDetector", "cloudant-key", None, False, None),
    ("softlayer", "SoftlayerDetector", "softlayer-key", None, False, None),
)
#: detect-secrets' modules the patterns are read from (the cache's key).
_SOURCES = ("aws", "keyword", "private_key", *(plugin[0] for plugin in _PLUGINS))


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern[str]
    # Tokens the pattern matches only a prefix of are extended to their end.
    tail: re.Pattern[str] | None = None
    # Loose patterns (no distinctive prefix) must not start inside a word.
    word_start: bool = False
    valid: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class PatternSet:
    tokens: tuple[Pattern, ...]
    private_key_headers: tuple[re.Pattern[str], ...]
    keyword: tuple[tuple[re.Pattern[str], int], ...]


def jwt_formally_valid(token: str) -> bool:
    """detect-secrets' JWT check, imported when a JWT-shaped string is found."""
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(token))


_VALIDATORS: dict[str, Callable[[str], bool]] = {"jwt": jwt_formally_valid}


@lru_cache(maxsize=1)
def pattern_set() -> PatternSet:
    """The patterns, compiled once per process (from the cache when it is current)."""
    key = _cache_key()
    cache = _cache_path()
    if key is not None and cache is not None:
        cached = _read_cache(cache, key)
        if cached is not None:
            return compile_patterns(cached)
    table = read_detect_secrets()
    if key is not None and cache is not None:
        _write_cache(cache, key, table)
    return compile_patterns(table)


def read_detect_secrets() -> dict[str, Any]:
    """Every pattern's source, as detect-secrets declares it now (imports it)."""
    import importlib

    from detect_secrets.plugins import keyword as ds_keyword
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    def source(regex: re.Pattern[str]) -> list[object]:
        return [regex.pattern, regex.flags]

    aws = list(AWSKeyDetector.denylist)
    tokens: list[list[object]] = [["aws-access-key", *source(aws[0]), "token", False, None]]
    tokens.extend(["aws-secret-key", *source(regex), None, False, None] for regex in aws[1:])
    for module, name, kind, tail, word_start, valid in _PLUGINS:
        detector = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        for regex in detector.denylist:
            tokens.append([kind, *source(regex), tail, word_start, valid])
    return {
        "tokens": tokens,
        "private_key_headers": [source(regex) for regex in PrivateKeyDetector.denylist],
        "keyword": [
            [*source(regex), group]
            for regex, group in ds_keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()
        ],
    }


def compile_patterns(table: dict[str, Any]) -> PatternSet:
    """The compiled patterns of *table* (``read_detect_secrets``'s shape), with ours."""
    tokens = [
        Pattern(
            kind,
            re.compile(pattern, flags),
            _TAILS[tail] if tail is not None else None,
            word_start,
            _VALIDATORS[valid] if valid is not None else None,
        )
        for kind, pattern, flags, tail, word_start, valid in table["tokens"]
    ]
    for kind, pattern in rules.OWN_TOKENS:
        tokens.append(Pattern(kind, re.compile(pattern), TOKEN_TAIL_RE, word_start=True))
    tokens.append(
        Pattern(
            "kubernetes-token",
            re.compile(rules.BOOTSTRAP_TOKEN),
            None,
            valid=rules.is_bootstrap_token,
        )
    )
    return PatternSet(
        tokens=tuple(tokens),
        # detect-secrets' list has no "BEGIN ENCRYPTED PRIVATE KEY" (PKCS#8, passphrase-protected).
        private_key_headers=(
            *(re.compile(p, f) for p, f in table["private_key_headers"]),
            ANY_PEM_KEY_HEADER_RE,
        ),
        keyword=tuple((re.compile(p, f), group) for p, f, group in table["keyword"]),
    )


# -- the cache --------------------------------------------------------------------------------


def _cache_path() -> Path | None:
    from memlane.core.errors import MemlaneError
    from memlane.core.paths import cache_dir

    try:
        return cache_dir() / CACHE_FILE
    except (MemlaneError, OSError, RuntimeError):
        return None  # no usable home: read detect-secrets itself


def _cache_key() -> list[list[object]] | None:
    """(file, size, mtime) of each source of the patterns; None when detect-secrets
    cannot be found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("detect_secrets")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    plugins = Path(next(iter(spec.submodule_search_locations))) / "plugins"
    files = [Path(__file__), *(plugins / f"{name}.py" for name in _SOURCES)]
    key: list[list[object]] = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            return None
        key.append([str(path), st.st_size, st.st_mtime_ns])
    return key


def _read_cache(path: Path, key: list[list[object]]) -> dict[str, Any] | None:
    """The cached table when it was made from these very files and is whole."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        table = data["table"]
        for kind, pattern, flags, tail, word_start, valid in table["tokens"]:
            if not (isinstance(kind, str) and isinstance(pattern, str) and isinstance(flags, int)):
                return None
            if tail not in (None, *_TAILS) or valid not in (None, *_VALIDATORS):
                return None
            if not isinstance(word_start, bool):
                return None
        for pattern, flags in table["private_key_headers"]:
            if not (isinstance(pattern, str) and isinstance(flags, int)):
                return None
        for pattern, flags, group in table["keyword"]:
            if not (isinstance(pattern, str) and isinstance(flags, int) and isinstance(group, int)):
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return table if isinstance(table, dict) else None


def _write_cache(path: Path, key: list[list[object]], table: dict[str, Any]) -> None:
    from memlane.core.atomic import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"key": key, "table": table}) + "\n")
    except OSError:
        pass  # a read-only home: the next process reads detect-secrets again
