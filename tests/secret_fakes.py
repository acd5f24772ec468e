"""Fake secrets for the redaction tests: one table, shared by every channel's test.

Every value is assembled at run time from a prefix and seeded random
characters, so the repository holds no string a secret scanner would flag,
and no value is a real credential. ``SECRETS`` is the table of
``SecretCase(name, kind, before, secret, after)``: ``redact(before + secret +
after)`` must give ``before + [REDACTED:kind] + after`` byte for byte.
``ORDINARY`` holds technical lines that must come through unchanged.
``CHANNEL_SAMPLE`` is a handful of rows, one per family, for the tests that
push text through a whole channel (CLI, MCP, capture, topics, sessions).
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

_rng = random.Random(20261214)
ALNUM = string.ascii_letters + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def rnd(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def mixed(n: int) -> str:
    """Random base62 with every class present (what a generated password looks like)."""
    while True:
        value = rnd(n)
        classes = (str.islower, str.isupper, str.isdigit)
        if all(any(test(c) for c in value) for test in classes):
            return value


def b64url(data: dict[str, object]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def pem(label: str, lines: int = 4) -> str:
    body = "\n".join(rnd(64, B64) for _ in range(lines)) + "\n" + rnd(20, B64) + "=="
    dashes = "-" * 5
    return f"{dashes}BEGIN {label}{dashes}\n{body}\n{dashes}END {label}{dashes}"


@dataclass(frozen=True)
class SecretCase:
    name: str
    kind: str
    before: str
    secret: str
    after: str

    @property
    def text(self) -> str:
        return self.before + self.secret + self.after

    @property
    def redacted(self) -> str:
        return f"{self.before}[REDACTED:{self.kind}]{self.after}"

    @property
    def line(self) -> str:
        """The secret's own line, to be set in the middle of a sentence."""
        return (self.before.split("\n")[-1] + self.secret + self.after.split("\n")[0]).strip()

    def fragments(self, size: int = 10) -> list[str]:
        """Every *size*-character piece of the secret: none may survive redaction."""
        return [self.secret[i : i + size] for i in range(max(len(self.secret) - size + 1, 1))]


JWT = (
    b64url({"alg": "RS256", "kid": "k1"})
    + "."
    + b64url({"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:ci"})
    + "."
    + rnd(86, URLSAFE)
)
PASSWORD = mixed(16)
DOCKER_AUTH = base64.b64encode(("ci-bot:" + mixed(20)).encode()).decode()
B64_KEY = base64.b64encode(pem("RSA PRIVATE KEY", 2).encode()).decode()
BOOTSTRAP = rnd(5, string.ascii_lowercase) + "7." + rnd(15, string.ascii_lowercase) + "4"
TWILIO_SK = "SK" + rnd(32, HEX)
LARAVEL_KEY = base64.b64encode(bytes(_rng.randrange(256) for _ in range(32))).decode()

_ROWS: list[tuple[str, str, str, str, str]] = [
    # AWS
    (
        "aws access key id",
        "aws-access-key",
        "aws_access_key_id = ",
        "AK" + "IA" + rnd(16, UPPER_DIGITS),
        "\n",
    ),
    ("aws secret key", "aws-secret-key", "aws_secret_access_key = ", rnd(40, B64), "\n"),
    ("aws session token", "token", "AWS_SESSION_TOKEN=", "IQoJb3JpZ2luX2Vj" + rnd(120, B64), "\n"),
    # Google Cloud
    ("gcp api key", "google-api-key", "?key=", "AI" + "za" + rnd(35, URLSAFE), "&address=Paris"),
    (
        "gcp oauth client secret",
        "google-oauth-secret",
        '"client_secret_web": "',
        "GOC" + "SPX-" + rnd(28, URLSAFE),
        '"',
    ),
    (
        "gcp oauth access token",
        "google-oauth-token",
        "got ",
        "ya" + "29." + rnd(80, URLSAFE),
        " from the metadata server",
    ),
    (
        "gcp refresh token",
        "google-oauth-token",
        "refresh with ",
        "1//0" + rnd(60, URLSAFE),
        " later",
    ),
    (
        "gcp service account key",
        "private-key",
        '{"private_key": "',
        pem("PRIVATE KEY").replace("\n", "\\n"),
        '\\n"}',
    ),
    # Azure
    (
        "azure storage key",
        "azure-storage-key",
        "DefaultEndpointsProtocol=https;AccountName=acme;",
        "AccountKey=" + rnd(86, B64) + "==",
        ";EndpointSuffix=core.windows.net",
    ),
    (
        "azure client secret",
        "azure-client-secret",
        "the app secret is ",
        rnd(3) + "8Q~" + rnd(34, ALNUM + "_~.-"),
        " (expires in 90 days)",
    ),
    (
        "azure sas signature",
        "azure-sas",
        "https://acme.blob.core.windows.net/c/x.zip?sv=2022-11-02&sp=r&sig=",
        rnd(43, ALNUM) + "%3D",
        "",
    ),
    # GitHub
    ("github classic pat", "github-token", "GH_TOKEN=", "gh" + "p_" + rnd(36), "\n"),
    ("github oauth token", "github-token", "token ", "gh" + "o_" + rnd(36), " was revoked"),
    (
        "github app token",
        "github-token",
        "installation token ",
        "gh" + "s_" + rnd(36),
        " expires in 1h",
    ),
    ("github user-to-server", "github-token", "user token ", "gh" + "u_" + rnd(36), " works"),
    (
        "github fine-grained pat",
        "github-token",
        "the fine-grained token ",
        "github" + "_pat_" + rnd(22) + "_" + rnd(59),
        " expires",
    ),
    # GitLab
    (
        "gitlab pat",
        "gitlab-token",
        'curl -H "PRIVATE-TOKEN: ',
        "gl" + "pat-" + rnd(20, URLSAFE),
        '" https://gitlab.example.com/api/v4',
    ),
    (
        "gitlab runner token",
        "gitlab-token",
        "gitlab-runner register --token ",
        "gl" + "rt-" + rnd(20, URLSAFE),
        " --url x",
    ),
    # Slack
    (
        "slack bot token",
        "slack-token",
        "SLACK_BOT_TOKEN=",
        "xo" + "xb-" + rnd(12, string.digits) + "-" + rnd(13, string.digits) + "-" + rnd(24),
        "\n",
    ),
    (
        "slack webhook",
        "slack-token",
        "post to ",
        "https://hooks.slack"
        + ".com/services/T"
        + rnd(10, UPPER_DIGITS)
        + "/B"
        + rnd(10, UPPER_DIGITS)
        + "/"
        + rnd(24),
        " on failure",
    ),
    # Stripe
    (
        "stripe live secret",
        "stripe-key",
        "stripe.api_key = '",
        "sk" + "_live_" + "51" + rnd(97),
        "'",
    ),
    (
        "stripe restricted",
        "stripe-key",
        "- charged with ",
        "rk" + "_live_" + rnd(40),
        " in staging",
    ),
    ("stripe test secret", "stripe-key", "test key ", "sk" + "_test_" + rnd(40), " for CI"),
    (
        "stripe webhook secret",
        "stripe-webhook-secret",
        "endpoint secret ",
        "wh" + "sec_" + rnd(32),
        " verified",
    ),
    # OpenAI, Anthropic, Hugging Face
    (
        "openai project key",
        "openai-key",
        "export OPENAI_API_KEY=",
        "sk-" + "proj-" + rnd(74, URLSAFE) + "T3Blbk" + "FJ" + rnd(74, URLSAFE),
        "\n",
    ),
    (
        "openai service key",
        "openai-key",
        "It failed with key ",
        "sk-" + "svcacct-" + rnd(90, URLSAFE),
        " (quota).",
    ),
    (
        "anthropic key",
        "anthropic-key",
        'Anthropic(api_key="',
        "sk-" + "ant-api03-" + rnd(93, URLSAFE) + "AA",
        '")',
    ),
    (
        "huggingface bare token",
        "huggingface-token",
        "huggingface-cli login --token ",
        "hf" + "_" + rnd(34, string.ascii_letters),
        " --add-to-git-credential",
    ),
    (
        "huggingface in prose",
        "huggingface-token",
        "the model pulls with ",
        "hf" + "_" + rnd(34, string.ascii_letters),
        " now",
    ),
    (
        "huggingface org token",
        "huggingface-token",
        "org token ",
        "api" + "_org_" + rnd(34, string.ascii_letters),
        " set",
    ),
    # Package registries
    ("npm token", "npm-token", "the CI secret is ", "np" + "m_" + rnd(36), ", rotate it"),
    (
        "npmrc auth token",
        "npm-token",
        "//registry.npmjs.org/:_authToken=",
        "np" + "m_" + rnd(36),
        "\n",
    ),
    (
        "pypi token",
        "pypi-token",
        "twine upload -u __token__ -p ",
        "pypi-" + "AgEIcHlwaS5vcmc" + rnd(80, URLSAFE),
        " dist/*",
    ),
    # Messaging and email
    ("twilio api key", "twilio-key", "twilio key ", TWILIO_SK, " for SMS"),
    (
        "sendgrid key",
        "sendgrid-key",
        "SENDGRID=",
        "S" + "G." + rnd(22, URLSAFE) + "." + rnd(43, URLSAFE),
        "\n",
    ),
    ("mailgun key", "mailgun-key", "mailgun: ", "key" + "-" + rnd(32, HEX), " (private)"),
    ("mailchimp key", "mailchimp-key", "mailchimp ", rnd(32, HEX) + "-us" + "12", " list sync"),
    (
        "discord bot token",
        "discord-token",
        "bot.run('",
        "MT" + rnd(22, ALNUM) + "." + rnd(6, URLSAFE) + "." + rnd(38, URLSAFE),
        "')",
    ),
    (
        "telegram bot token",
        "telegram-token",
        "TELEGRAM_BOT=",
        rnd(10, string.digits) + ":AA" + rnd(33, URLSAFE),
        "\n",
    ),
    (
        "telegram api url",
        "telegram-token",
        "https://api.telegram.org/bot",
        rnd(10, string.digits) + ":AA" + rnd(33, URLSAFE),
        "/getMe",
    ),
    # Commerce and hosting
    (
        "shopify access token",
        "shopify-token",
        "X-Shopify-Access-Token: ",
        "shp" + "at_" + rnd(32, HEX),
        "\n",
    ),
    (
        "shopify shared secret",
        "shopify-token",
        "shared secret ",
        "shp" + "ss_" + rnd(32, HEX),
        " for webhooks",
    ),
    (
        "shopify custom app",
        "shopify-token",
        "custom app ",
        "shp" + "ca_" + rnd(32, HEX),
        " installed",
    ),
    (
        "shopify private app",
        "shopify-token",
        "private app ",
        "shp" + "pa_" + rnd(32, HEX),
        " installed",
    ),
    (
        "digitalocean pat",
        "digitalocean-token",
        "doctl auth init -t ",
        "do" + "p_v1_" + rnd(64, HEX),
        "",
    ),
    (
        "digitalocean oauth",
        "digitalocean-token",
        "oauth ",
        "do" + "o_v1_" + rnd(64, HEX),
        " issued",
    ),
    (
        "digitalocean refresh",
        "digitalocean-token",
        "refresh ",
        "do" + "r_v1_" + rnd(64, HEX),
        " stored",
    ),
    (
        "heroku platform key",
        "heroku-key",
        "heroku token ",
        "HR" + "KU-" + rnd(60, URLSAFE),
        " added",
    ),
    (
        "heroku legacy key",
        "api-key",
        "HEROKU_API_KEY=",
        "2b4f8e1a-6c3d-4a7e-9f0b-5d1c8e2a7b36",
        "\n",
    ),
    # Other developer platforms
    ("vault token", "vault-token", "VAULT_TOKEN is ", "hv" + "s." + rnd(90, URLSAFE), " for now"),
    (
        "databricks token",
        "databricks-token",
        "databricks token ",
        "da" + "pi" + rnd(32, HEX),
        " works",
    ),
    (
        "atlassian api token",
        "atlassian-token",
        "jira token ",
        "ATA" + "TT3" + rnd(180, URLSAFE),
        " for the bot",
    ),
    ("linear api key", "linear-key", "linear ", "lin" + "_api_" + rnd(40), " added"),
    (
        "postman api key",
        "postman-key",
        "postman ",
        "PM" + "AK-" + rnd(24, HEX) + "-" + rnd(34, HEX),
        " synced",
    ),
    (
        "grafana service account",
        "grafana-token",
        "grafana ",
        "gl" + "sa_" + rnd(32) + "_" + rnd(8, HEX),
        " set",
    ),
    ("new relic key", "newrelic-key", "newrelic ", "NR" + "AK-" + rnd(27, UPPER_DIGITS), " set"),
    (
        "age secret key",
        "age-secret-key",
        "# ",
        "AGE-SECRET" + "-KEY-1" + rnd(58, UPPER_DIGITS),
        "\n",
    ),
    ("supabase token", "supabase-token", "supabase ", "sb" + "p_" + rnd(40, HEX), " linked"),
    (
        "terraform cloud token",
        "terraform-token",
        'token = "',
        rnd(14, LOWER_DIGITS) + ".atlas" + "v1." + rnd(70, URLSAFE),
        '"',
    ),
    # Tokens in general formats
    ("jwt cookie", "jwt", "The cookie session=", JWT, "; Path=/; HttpOnly"),
    (
        "bearer header",
        "bearer-token",
        "curl -H 'Authorization: Bearer ",
        rnd(48, URLSAFE) + "7",
        "' https://api.example.com",
    ),
    (
        "basic auth header",
        "bearer-token",
        "Authorization: Basic ",
        base64.b64encode(("ada:" + PASSWORD).encode()).decode(),
        "\n",
    ),
    ("high-entropy literal", "high-entropy", 'headers["X-Client"] = "', mixed(40), '"'),
    ("high-entropy dict value", "high-entropy", 'cfg = {"x": "', mixed(32), '"}'),
    # Private keys
    ("rsa private key", "private-key", 'key = """', pem("RSA PRIVATE KEY"), '"""'),
    (
        "openssh private key",
        "private-key",
        "~/.ssh/id_ed25519:\n\n",
        pem("OPENSSH PRIVATE KEY"),
        "\n\nThen ssh-add it.",
    ),
    ("ec private key", "private-key", "server.key:\n", pem("EC PRIVATE KEY"), "\n"),
    (
        "encrypted private key",
        "private-key",
        "openssl wrote\n",
        pem("ENCRYPTED PRIVATE KEY"),
        "\nto key.pem",
    ),
    # URLs and databases
    (
        "https url password",
        "password",
        "git clone https://ada:",
        mixed(18),
        "@git.example.com/acme/api.git",
    ),
    (
        "postgres url",
        "password",
        "DATABASE_URL=postgres://app:",
        mixed(12) + "!",
        "@db:5432/orders",
    ),
    (
        "mongodb srv url",
        "password",
        "mongodb+srv://svc:",
        mixed(20),
        "@cluster0.ab1cd.mongodb.net/app",
    ),
    ("redis url", "password", "redis://default:", mixed(24), "@cache.internal:6379/0"),
    ("amqp url", "password", "amqp://worker:", mixed(16), "@mq:5672/%2f"),
    # .env and config files
    (".env secret key", "secret", "SECRET_KEY=", mixed(50), "\n"),
    (".env db password", "password", "DB_PASSWORD='", mixed(14) + "#%", "'\n"),
    ("export api token", "token", 'export API_TOKEN="', mixed(40), '"\n'),
    (
        "yaml password",
        "password",
        "database:\n  host: db\n  password: ",
        mixed(14),
        "\n  port: 5432\n",
    ),
    ("json client secret", "secret", '{"client_secret": "', mixed(32), '", "client_id": "web"}'),
    # Kubernetes
    (
        "kubeconfig bootstrap token",
        "kubernetes-token",
        "users:\n- name: boot\n  user:\n    token: ",
        BOOTSTRAP,
        "\n",
    ),
    (
        "kubeadm join token",
        "kubernetes-token",
        "kubeadm join 10.0.0.1:6443 --token ",
        BOOTSTRAP,
        " --discovery-token-ca-cert-hash x",
    ),
    ("kubeconfig client key data", "private-key", "    client-key-data: ", B64_KEY, "\n"),
    ("kubeconfig service account token", "jwt", "    token: ", JWT, "\n"),
    # netrc, docker, CLIs
    (
        "netrc one line",
        "password",
        "machine api.heroku.com login ada@example.com password ",
        mixed(20),
        "\n",
    ),
    (
        "netrc lines",
        "password",
        "machine git.example.com\n  login ada\n  password ",
        mixed(20),
        "\n",
    ),
    (
        "docker config auth",
        "docker-auth",
        '{"auths": {"https://index.docker.io/v1/": {"auth": "',
        DOCKER_AUTH,
        '"}}}',
    ),
    ("docker identity token", "docker-auth", '{"identitytoken": "', mixed(40), '"}'),
    ("docker login -p", "password", "docker login -u ci -p ", mixed(20), " registry.example.com"),
    ("mysql -p", "password", "mysql -u root -p", mixed(14), " app"),
    (
        "mysqldump -p quoted",
        "password",
        "mysqldump -uroot -p'",
        mixed(12) + "$x",
        "' shop > dump.sql",
    ),
    ("mysql --password=", "password", "mysql --user=root --password=", mixed(14), " app"),
    ("psql PGPASSWORD", "password", "PGPASSWORD=", mixed(16), " psql -h db -U app orders"),
    ("psql conninfo", "password", 'psql "host=db user=app password=', mixed(16), ' dbname=orders"'),
    ("sshpass", "password", "sshpass -p ", mixed(14), " ssh deploy@host"),
    ("redis-cli -a", "password", "redis-cli -h cache -a ", mixed(24), " ping"),
    ("cli --token flag", "token", "deploy --token ", mixed(32), " --env prod"),
    # Issue 28: a key-like name with a generated value, and vendor prefixes.
    ("algolia admin key", "api-key", "ALGOLIA_ADMIN_KEY=", rnd(32, HEX), "\n"),
    ("rails secret key base", "secret", "SECRET_KEY_BASE=", rnd(128, HEX), "\n"),
    ("laravel app key", "api-key", "APP_KEY=", "base64:" + LARAVEL_KEY, "\n"),
    ("encryption key hex", "api-key", "ENCRYPTION_KEY=", rnd(64, HEX), "\n"),
    ("datadog api key", "api-key", "DD_API_KEY=", rnd(32, HEX), " datadog-agent run"),
    ("okta ssws header", "bearer-token", "Authorization: SSWS ", "00" + rnd(40, URLSAFE), "\n"),
    (
        "square access token",
        "square-token",
        "square token ",
        "sq0" + "atp-" + rnd(22, URLSAFE),
        " for payments",
    ),
    (
        "firebase legacy server key",
        "firebase-key",
        "FCM server key ",
        "AA" + "AA" + rnd(7, URLSAFE) + ":APA" + "91b" + rnd(134, URLSAFE),
        " (legacy)",
    ),
    (
        "slack app token",
        "slack-token",
        "SLACK_APP=",
        "xa" + "pp-1-A" + rnd(10, UPPER_DIGITS) + "-" + rnd(13, string.digits) + "-" + rnd(64, HEX),
        "\n",
    ),
    (
        "docker hub pat",
        "dockerhub-token",
        "hub token ",
        "dc" + "kr_pat_" + rnd(27, URLSAFE),
        " set",
    ),
    (
        "planetscale token",
        "planetscale-token",
        "pscale ",
        "psc" + "ale_tkn_" + rnd(43, URLSAFE),
        " works",
    ),
    ("rubygems key", "rubygems-key", "gem push with ", "ruby" + "gems_" + rnd(48, HEX), " done"),
    ("camelcase encryption key", "api-key", '"encryptionKey": "', rnd(64, HEX), '"'),
    ("azure storage key env", "api-key", "AZURE_STORAGE_KEY=", rnd(86, B64) + "==", "\n"),
    ("yaml signing key", "api-key", "jwt:\n  signing_key: ", rnd(44, B64), "\n"),
    ("password in prose", "password", "the new password is ", mixed(16), " until Friday"),
    ("token in prose", "token", "use the token ", mixed(32), " for the staging API"),
]

SECRETS = [SecretCase(*row) for row in _ROWS]

# One row per family, for tests of whole channels (which run the same redact()).
CHANNEL_SAMPLE = [
    case
    for case in SECRETS
    if case.name
    in {
        "huggingface in prose",
        "shopify access token",
        "kubeconfig bootstrap token",
        "netrc one line",
        "mysql -p",
        "high-entropy dict value",
    }
]

# The rows whose secret is one line: those can stand in the middle of a sentence.
ONE_LINE = [case for case in SECRETS if "\n" not in case.secret]

ORDINARY: list[str] = [
    "token = await get_token()",
    'api_key_header = "X-API-Key"',
    'TOKEN_KEY = "auth_token"\nlocalStorage.getItem(TOKEN_KEY)',
    'secret_name = "prod/billing/db"',
    'TOKEN_URL = "https://oauth2.googleapis.com/token"',
    "DB_PASSWORD_FILE=/run/secrets/db_password",
    '"token_type": "bearer", "expires_in": 3600',
    "secret = os.urandom(32)",
    'password = request.form["password"]',
    'api_key = config.get("api_key")',
    "password = newPassword\ntoken = user_token\n",
    "if token is None:\n    raise AuthError('missing token')",
    "def rotate_secret(secret_id: str, *, force: bool = False) -> None:",
    "Passwords must be at least 12 characters; the password reset flow sends an email.",
    'headers = {"Authorization": f"Bearer {token}"}',
    "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d",
    "mysql -u root -p app_db < schema.sql",
    "docker run -p 8080:8080 -e PORT=8080 app",
    "redis-cli -h cache -p 6379 ping",
    "psql -h db -U app -d orders -W",
    "ssh -p 2222 deploy@example.com",
    "We discussed machine learning; the login page and the password recovery flow come next.",
    "password hashing uses argon2id with m=64MiB",
    "Fixed in 3f2c9b1e4d5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c, see also 22eade9.",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "ID 9F1B2C3D-4E5F-4A6B-8C7D-0E1F2A3B4C5D is uppercase",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    '"integrity": "sha512-' + rnd(86, B64) + '=="',
    'files = [{file = "x-1.0.whl", hash = "sha256:' + rnd(64, HEX) + '"}]',
    "github.com/stretchr/testify v1.9.0 h1:" + rnd(43, B64) + "=",
    'checksum = "' + rnd(64, HEX) + '"',
    "image: ghcr.io/acme/api@sha256:" + rnd(64, HEX),
    "git clone https://ada@github.com/acme/api.git && ssh://git@github.com/acme/api",
    "open http://localhost:8080/search?q=redis&k=5 or https://example.com/a/b?page=2",
    'payload = base64.b64decode("SGVsbG8sIFdvcmxkIQ==")',
    'HEADER = "eyJhbGciOiJub25lIn0"  # {"alg":"none"}',
    'PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="',
    'handler = "handleOAuth2CallbackRequest"',
    '{"type": "image", "data": "iVBORw0KGgoBASE64DATA", "mimeType": "image/png"}',
    'test_id = "TestCase1ShouldPassWithValidInput"',
    "MAX_TOKENS=4096\ntokenizer = AutoTokenizer.from_pretrained(name)\n",
    'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])',
    "api_key = settings.OPENAI_API_KEY\nself.token = token\n",
    "def login(user: str, password: str) -> None:\n    token: str\n",
    "OPENAI_API_KEY=<your key here>\nAPI_TOKEN=${API_TOKEN}\npassword: ${DB_PASSWORD}\n",
    "export PATH=$HOME/.local/bin:$PATH\nexport AWS_REGION=eu-west-1\n",
    "<!-- session:3f2c9b1e turn:ab12cd34 transcript:/home/u/.pi/agent/sessions/x.jsonl -->",
    "chunk a1b2c3d4e5f60718 in ms_demo_84a8cd7d, content_hash 0f1e2d3c4b5a6978",
    "import os.path\nfrom django.contrib.auth import views\n",
    "the version is 2.31.0; pinned requests==2.31.0 and urllib3<3",
    "| metric | r@1 | r@5 |\n|---|---|---|\n| bm25 | 0.41 | 0.62 |",
    "already redacted: [REDACTED:github-token] and [private] stay as they are",
    # Issue 28: look-alikes of the key-like-name and prose rules.
    "git show " + rnd(40, HEX) + " touched the token refresh code",
    "the sha256 digest is " + rnd(64, HEX) + " for the release tarball",
    "Commit " + rnd(40, HEX) + " rotated the password hashing cost.",
    'request_id = "9f1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"',
    "idempotency key 123e4567-e89b-12d3-a456-426614174000 was reused",
    "cache_key: " + rnd(40, HEX),
    'cache_key = f"user:{user_id}"\nsort_key = lambda item: item.created_at',
    "primary_key = True\nforeign_key = models.ForeignKey(User)",
    "VAPID_PUBLIC_KEY=B" + rnd(86, URLSAFE),
    "password_field = form.password",
    'FIXTURE = "aGVsbG8gd29ybGQ="  # base64 of hello world',
    'expected = base64.b64encode(b"user:pass").decode()',
    "the password reset token expires after 30 minutes",
    "token: the one you created in step 2",
    "password: see the vault entry for staging",
    "The secret to fast builds is caching: 3x faster since v2.4.1.",
    "key = hashlib.sha256(data).hexdigest()",
    'KEY_PREFIX = "memlane:v2:"',
    "Authorization: SSWS ${OKTA_API_TOKEN}",
    "the API key is stored in the vault, not in the repository",
    'api_key: str = Field(..., description="your key")',
    "token_count = 4096; the token budget is 128000 tokens",
    "APP_KEY=\nENCRYPTION_KEY=changeme\n",
    "deploy-key-2024-rotation is the name of the deploy key",
    'cacheKey = "' + rnd(64, HEX) + '"\nsortKey: ' + rnd(40, HEX),
    "publicKey: " + rnd(44, B64),
    "the monkey " + rnd(40, HEX) + " and the hotkey = " + mixed(20),
]

# The kinds issue 28 found stored verbatim (whole line or mid-sentence), for
# the tests that push them through every way in.
ISSUE_28 = [
    case
    for case in SECRETS
    if case.name
    in {
        "algolia admin key",
        "rails secret key base",
        "laravel app key",
        "encryption key hex",
        "okta ssws header",
        "square access token",
        "firebase legacy server key",
        "aws secret key",
        ".env db password",
        "datadog api key",
        "psql PGPASSWORD",
        "yaml password",
        "kubeconfig bootstrap token",
        "password in prose",
        "token in prose",
    }
]


def in_sentence(case: SecretCase) -> str:
    """*case*'s line in the middle of a sentence, as an agent or a person writes it."""
    return f"On the staging box we set {case.line} and the deploy went through."


def every_kind_text() -> str:
    """Every SECRETS case as written, then every one-line case mid-sentence."""
    whole = "\n\n".join(case.text for case in SECRETS)
    return whole + "\n\n" + "\n".join(in_sentence(case) for case in ONE_LINE)
