"""Secret redaction (store/redaction.py, ADR 0006).

Every fake secret is assembled at run time from a prefix and seeded random
characters, so this file holds no string a secret scanner would flag.
"""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.core.errors import StoreError
from memlane.store.redaction import (
    UNSCANNABLE,
    Redaction,
    marker,
    redact,
    redact_for_storage,
    scanner_failure,
)

_rng = random.Random(20261130)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def rnd(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64url(data: dict[str, object]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def pem(label: str, lines: int = 6) -> str:
    body = "\n".join(rnd(64, B64) for _ in range(lines)) + "\n" + rnd(20, B64) + "=="
    dashes = "-" * 5
    return f"{dashes}BEGIN {label}{dashes}\n{body}\n{dashes}END {label}{dashes}"


AWS_KEY_ID = "AK" + "IA" + rnd(16, UPPER_DIGITS)
AWS_SECRET = rnd(40, B64)
GHP = "gh" + "p_" + rnd(36)
GITHUB_PAT = "github" + "_pat_" + rnd(22) + "_" + rnd(59)
GLPAT = "gl" + "pat-" + rnd(20, URLSAFE)
SLACK = "xo" + "xb-" + rnd(12, string.digits) + "-" + rnd(13, string.digits) + "-" + rnd(24)
STRIPE = "sk" + "_live_" + "51" + rnd(97)
OPENAI = "sk-" + "proj-" + rnd(74, URLSAFE) + "T3Blbk" + "FJ" + rnd(74, URLSAFE)
OPENAI_NO_MARKER = "sk-" + "svcacct-" + rnd(90, URLSAFE)
ANTHROPIC = "sk-" + "ant-api03-" + rnd(93, URLSAFE) + "AA"
GOOGLE = "AI" + "za" + rnd(35, URLSAFE)
JWT = (
    b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + b64url({"sub": "1234567890", "name": "Ada", "iat": 1732000000})
    + "."
    + rnd(43, URLSAFE)
)
NPM = "np" + "m_" + rnd(36)
SENDGRID = "S" + "G." + rnd(22, URLSAFE) + "." + rnd(43, URLSAFE)
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + rnd(80, URLSAFE)
BEARER = "ya29." + rnd(60, URLSAFE)
DB_PASSWORD = rnd(6) + "!" + rnd(6)
RSA_KEY = pem("RSA PRIVATE KEY")
OPENSSH_KEY = pem("OPENSSH PRIVATE KEY")
PKCS8_KEY = pem("PRIVATE KEY")
ENCRYPTED_KEY = pem("ENCRYPTED PRIVATE KEY")
ENV_SECRET = rnd(32)
ENV_TOKEN = rnd(40, URLSAFE)
ENV_PASSWORD = rnd(14, ALNUM + "#%^*")

# (kind, before, secret, after): redact(before + secret + after) must equal
# before + [REDACTED:kind] + after, byte for byte.
CASES: list[tuple[str, str, str, str]] = [
    ("aws-access-key", "[default]\naws_access_key_id = ", AWS_KEY_ID, "\n"),
    ("aws-access-key", "upload failed for key ", AWS_KEY_ID, ": AccessDenied (403)"),
    ("aws-secret-key", "[default]\naws_secret_access_key = ", AWS_SECRET, "\nregion = eu-west-1\n"),
    ("aws-secret-key", 'client = boto3.client("s3", aws_secret_access_key="', AWS_SECRET, '")'),
    ("github-token", "I exported GH_TOKEN=", GHP, " before running gh pr create."),
    (
        "github-token",
        "git remote set-url origin https://x-access-token:",
        GHP,
        "@github.com/acme/api.git",
    ),
    ("github-token", "the fine-grained token ", GITHUB_PAT, " expires in 30 days"),
    (
        "gitlab-token",
        'curl --header "PRIVATE-TOKEN: ',
        GLPAT,
        '" https://gitlab.example.com/api/v4',
    ),
    ("slack-token", "SlackClient(token='", SLACK, "')  # bot user"),
    ("stripe-key", "stripe.api_key = '", STRIPE, "'\n"),
    ("stripe-key", "- charged the card with ", STRIPE, " in the staging shell"),
    ("openai-key", "export OPENAI_API_KEY=", OPENAI, "\n"),
    ("openai-key", "It failed with key ", OPENAI_NO_MARKER, " (insufficient_quota)."),
    ("anthropic-key", "ANTHROPIC_API_KEY=", ANTHROPIC, "\n"),
    ("anthropic-key", 'client = Anthropic(api_key="', ANTHROPIC, '")'),
    ("google-api-key", "https://maps.googleapis.com/maps/api/geocode/json?key=", GOOGLE, "&q=x"),
    ("jwt", "The cookie session=", JWT, "; Path=/; HttpOnly was rejected."),
    (
        "google-oauth-token",
        "curl -H 'Authorization: Bearer ",
        BEARER,
        "' https://api.example.com/v1",
    ),
    ("bearer-token", "> Authorization: token ", rnd(40, "0123456789abcdef"), "\n"),
    ("npm-token", "//registry.npmjs.org/:_authToken=", NPM, "\n"),
    ("npm-token", "the CI secret is ", NPM, ", rotate it monthly"),
    ("sendgrid-key", "SENDGRID=", SENDGRID, "\n"),
    ("pypi-token", "twine upload -u __token__ -p ", PYPI, " dist/*"),
    ("password", "DATABASE_URL=postgres://app:", DB_PASSWORD, "@db:5432/orders"),
    ("password", "redis://default:", rnd(24), "@cache.internal:6379/0 is the cache"),
    ("password", "mysql://root:", "p@ss" + rnd(8), "@127.0.0.1/app"),
    ("secret", "FOO_SECRET=", ENV_SECRET, "\n"),
    ("token", 'export API_TOKEN="', ENV_TOKEN, '"\n'),
    ("password", "DB_PASSWORD='", ENV_PASSWORD, "'\n"),
    ("password", "database:\n  host: db\n  password: ", ENV_PASSWORD, "\n  port: 5432\n"),
    ("secret", '{"client_secret": "', ENV_SECRET, '", "client_id": "web"}'),
    ("password", 'if password == "', ENV_PASSWORD, '":'),
    ("password", "db:\r\n  password: ", ENV_PASSWORD, "\r\n  port: 5432\r\n"),
    ("token", "docker run -e HF_TOKEN=", ENV_TOKEN, " -p 8080:8080 app"),
    ("private-key", 'key = """', RSA_KEY, '"""\nprint("loaded")'),
    ("private-key", "Here is ~/.ssh/id_ed25519:\n\n", OPENSSH_KEY, "\n\nThen ssh-add it."),
    ("private-key", "openssl pkcs8 wrote\n", ENCRYPTED_KEY, "\nto key.pem"),
    (
        "private-key",
        '{"type": "service_account", "private_key": "',
        PKCS8_KEY.replace("\n", "\\n"),
        '\\n", "client_email": "x@y.iam.gserviceaccount.com"}',
    ),
]

KINDS = {case[0] for case in CASES}


def test_at_least_twelve_kinds_are_covered() -> None:
    assert len(KINDS | {"private"}) >= 12


@pytest.mark.parametrize(("kind", "before", "secret", "after"), CASES)
def test_secret_value_is_replaced_and_nothing_else(
    kind: str, before: str, secret: str, after: str
) -> None:
    result = redact(before + secret + after)
    assert result.text == before + marker(kind) + after
    assert result.count == 1
    assert result.kinds == (kind,)


def test_the_issue_examples() -> None:
    assert redact("OPENAI_API_KEY=" + OPENAI).text == "OPENAI_API_KEY=[REDACTED:openai-key]"
    url = "postgres://app:" + DB_PASSWORD + "@db:5432/x"
    assert redact(url).text == "postgres://app:[REDACTED:password]@db:5432/x"
    assert redact("id " + AWS_KEY_ID).text == "id [REDACTED:aws-access-key]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>my card is 4111</private> b", "a [private] b"),
        ("keep\n<private>\nline one\nline two\n</private>\nkeep too", "keep\n[private]\nkeep too"),
        ("before <private>everything after an unclosed tag\n\nis gone", "before [private]"),
        ("x <PRIVATE>shouted</Private> y <private>a</private>", "x [private] y [private]"),
        ("a stray </private> closing tag stays", "a stray </private> closing tag stays"),
    ],
)
def test_private_blocks_are_dropped(text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected
    assert result.kinds == (("private",) if expected != text else ())


def test_a_secret_inside_a_private_block_counts_once_as_private() -> None:
    result = redact("<private>" + GHP + "</private> then " + NPM)
    assert result.text == "[private] then [REDACTED:npm-token]"
    assert result.count == 2
    assert result.kinds == ("npm-token", "private")


def test_unclosed_private_key_stops_at_the_end_of_the_key_body() -> None:
    block = pem("EC PRIVATE KEY").rsplit("\n", 1)[0]  # END line lost in a truncated paste
    result = redact("pasted:\n" + block + "\n\nthe rest of the answer")
    assert result.text == "pasted:\n[REDACTED:private-key]\n\nthe rest of the answer"


def test_unclosed_private_key_with_windows_line_endings() -> None:
    block = pem("RSA PRIVATE KEY").rsplit("\n", 1)[0].replace("\n", "\r\n")
    result = redact("key:\r\n" + block + "\r\n\r\nnext step")
    assert result.text == "key:\r\n[REDACTED:private-key]\r\n\r\nnext step"


def test_several_secrets_in_one_exchange() -> None:
    text = (
        "## Deploy\n"
        f"- set `STRIPE_KEY={STRIPE}` and `GITHUB_TOKEN={GHP}` in the CI settings\n"
        f"- the webhook posts with `Authorization: Bearer {BEARER}`\n"
    )
    result = redact(text)
    assert result.count == 3
    assert result.kinds == ("github-token", "google-oauth-token", "stripe-key")
    for secret in (STRIPE, GHP, BEARER):
        assert secret not in result.text
    assert result.text.startswith("## Deploy\n- set `STRIPE_KEY=[REDACTED:stripe-key]` and")


NEGATIVES = [
    "Fixed in 3f2c9b1e4d5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c, see also 22eade9.",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "chunk a1b2c3d4e5f60718 in ms_demo_84a8cd7d, content_hash 0f1e2d3c4b5a6978",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "<!-- session:3f2c9b1e turn:ab12cd34 transcript:/home/u/.pi/agent/sessions/x.jsonl -->",
    "### 14:05\n- the user and the agent moved the hot cache to Redis with 5 minute TTLs\n",
    "Edited src/memlane/store/redaction.py and /home/u/.config/memlane/config.toml",
    "The token budget is 4096 tokens; the password reset flow sends an email.",
    "MAX_TOKENS=4096\ntokenizer = AutoTokenizer.from_pretrained(name)\n",
    'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])',
    "api_key = settings.OPENAI_API_KEY\nself.token = token\n",
    "def login(user: str, password: str) -> None:\n    token: str\n",
    "password = getpass.getpass()",
    "OPENAI_API_KEY=<your key here>\nAPI_TOKEN=${API_TOKEN}\npassword: ${DB_PASSWORD}\n",
    "secret: the user forgot where they stored it",
    "He was the bearer of disappointing news about authentication.",
    "Authorization: required for the admin routes",
    "git clone https://github.com/acme/api.git && ssh://git@github.com/acme/api",
    "mail ada@example.com or open http://localhost:8080/search?q=redis&k=5",
    "export PATH=$HOME/.local/bin:$PATH\nexport AWS_REGION=eu-west-1\n",
    '[llm]\napi_key = "env:' + 'OPENAI_API_KEY"\n',  # split: detect-secrets would flag it
    '{"pad_token":"[PAD]","unk_token":"[UNK]"}',
    "| metric | r@1 | r@5 |\n|---|---|---|\n| bm25 | 0.41 | 0.62 |",
    "already redacted: [REDACTED:github-token] and [private] stay as they are",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == Redaction(text, 0, ())


@pytest.mark.parametrize(("kind", "before", "secret", "after"), CASES)
def test_redaction_is_idempotent(kind: str, before: str, secret: str, after: str) -> None:
    once = redact(before + secret + after)
    twice = redact(once.text)
    assert twice == Redaction(once.text, 0, ())


def test_result_is_frozen() -> None:
    result = redact("x")
    with pytest.raises(AttributeError):
        result.text = "y"  # type: ignore[misc]


def test_failure_inside_the_scanner_fails_closed() -> None:
    text = "OPENAI_API_KEY=" + OPENAI
    with scanner_failure(RuntimeError("scanner bug")):
        result = redact(text)
        with pytest.raises(StoreError, match="could not be scanned"):
            redact_for_storage("Decision: we use postgres 16 for billing")
    assert result == Redaction(marker(UNSCANNABLE), 1, (UNSCANNABLE,))  # the text is withheld
    # The hook ends with its block: the same text is scanned normally again.
    assert redact(text).kinds == ("openai-key",)
    assert redact_for_storage("plain words") == "plain words"


def test_importing_the_module_does_not_import_detect_secrets() -> None:
    code = (
        "import sys, memlane.store.redaction\n"
        "assert 'detect_secrets' not in sys.modules\n"
        "assert 'requests' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_10kb_exchange_keeps_everything_but_its_secret() -> None:
    # How fast this goes is benchmarks/bench_redaction.py's business.
    line = "- the agent ran `pytest -q` in src/memlane/store and fixed a1b2c3d4e5f60718\n"
    body = line * (10_000 // len(line))
    result = redact(body + "export OPENAI_API_KEY=" + OPENAI + "\n")
    assert result == Redaction(
        body + "export OPENAI_API_KEY=[REDACTED:openai-key]\n", 1, ("openai-key",)
    )


# --- properties --------------------------------------------------------------------------

STANDALONE = [AWS_KEY_ID, GHP, GITHUB_PAT, GLPAT, SLACK, STRIPE, OPENAI, OPENAI_NO_MARKER]
STANDALONE += [ANTHROPIC, GOOGLE, JWT, NPM, SENDGRID, PYPI, RSA_KEY, OPENSSH_KEY]
MAX_MARKER = max(len(marker(k)) for k in [*KINDS, "unscannable", "aws-secret-key"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_text_never_raises_and_is_idempotent(text: str) -> None:
    result = redact(text)
    assert result.count == 0 or result.kinds
    assert len(result.text) <= len(text) + result.count * MAX_MARKER
    assert redact(result.text) == Redaction(result.text, 0, ())
    if result.count == 0:
        assert result.text == text


_noise = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r"), max_size=40)
_separator = st.sampled_from([" ", "\n", "\n\n", "\t", " | ", "\n- "])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_noise, _separator, st.sampled_from(STANDALONE), _separator), min_size=1))
def test_no_known_secret_survives_among_noise(
    parts: list[tuple[str, str, str, str]],
) -> None:
    text = "".join(noise + left + secret + right for noise, left, secret, right in parts)
    result = redact(text)
    for _, _, secret, _ in parts:
        assert secret not in result.text
    assert redact(result.text).text == result.text


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("=:'\"$ \n-_.@/[]<>ABCabc019")), max_size=60),
    st.sampled_from(["password", "API_TOKEN", "secret", "Bearer", "https://u:", "<private>"]),
)
def test_adversarial_punctuation_is_idempotent(noise: str, word: str) -> None:
    text = noise[: len(noise) // 2] + word + noise[len(noise) // 2 :]
    once = redact(text)
    assert redact(once.text) == Redaction(once.text, 0, ())
