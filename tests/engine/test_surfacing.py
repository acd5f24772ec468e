"""Auto-surfacing (engine/topics/surfacing/) on a realistic topic store, with the bundled model.

``TOPICS`` is a small project memory on varied subjects; ``RELEVANT`` maps
prompts to the topics they should surface and ``IRRELEVANT`` lists prompts
that should surface nothing. ``calibrate()`` prints every candidate's
evidence for those prompts: it is how ``SCORE_FLOOR`` and
``EVIDENCE_FLOOR`` were chosen (``python tests/engine/test_surfacing.py``).
How long selection and rendering take on a large store is a benchmark
(``benchmarks/bench_autocontext.py --part surfacing``), not a test.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import TOPIC_DAY, FixedClock, make_project, open_memory
from memlane.core.settings import TopicSettings
from memlane.engine.project import Memory
from memlane.engine.topics import surfacing as S
from memlane.store import topics as store_topics

# (topic, type, description, [(title, content)])
TOPICS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    (
        "Debugging Tips",
        "feedback",
        "SSH to staging on port 2222; MySQL connection timeout after 30s on staging",
        [
            ("SSH Gotcha", "staging uses port 2222, the key is at ~/.ssh/staging_ed25519"),
            (
                "MySQL Timeout",
                "connections to the staging MySQL drop after 30 s idle; the pool sets "
                "pool_recycle=25 in db/engine.py to avoid 'MySQL server has gone away'",
            ),
        ],
    ),
    (
        "Code Style",
        "user",
        "The user wants 4-space indentation, type hints everywhere and ruff formatting",
        [
            ("Indentation", "always 4 spaces, never tabs, in Python and YAML"),
            ("Type hints", "every public function has full type hints; mypy --strict must pass"),
            ("Formatter", "format with ruff format, line length 100; no black"),
        ],
    ),
    (
        "Release Process",
        "project",
        "Releases are cut from main with a signed tag and published to PyPI by CI",
        [
            (
                "Tagging",
                "bump the version in pyproject.toml, then git tag -s vX.Y.Z and push the tag",
            ),
            ("PyPI upload", "the publish workflow uploads to PyPI with trusted publishing"),
            ("Changelog", "CHANGELOG.md gets a section per release, written before tagging"),
        ],
    ),
    (
        "Database Migrations",
        "project",
        "Alembic migrations live in migrations/versions; never edit an applied migration",
        [
            (
                "Creating a migration",
                "run alembic revision --autogenerate -m 'message' and review the diff",
            ),
            ("Applied migrations", "never edit a migration once it ran in production"),
        ],
    ),
    (
        "Frontend Build",
        "reference",
        "The web UI is built with Vite; npm run build outputs to web/dist",
        [
            ("Vite config", "web/vite.config.ts proxies /api to localhost:8000 in dev"),
            ("Node version", "Node 20 is required; nvm use reads .nvmrc"),
        ],
    ),
    (
        "Authentication",
        "project",
        "JWT access tokens expire after 15 minutes; refresh tokens rotate on every use",
        [
            ("Token lifetime", "access tokens live 15 minutes, refresh tokens 30 days"),
            (
                "Refresh race",
                "two tabs refreshing at once invalidated each other; refresh calls are "
                "serialised with a lock in auth/refresh.py",
            ),
        ],
    ),
    (
        "Testing",
        "feedback",
        "Integration tests use a real Postgres in Docker, not mocks; pytest -x runs fast tests",
        [
            (
                "Real database",
                "use the real Postgres container (docker compose up db), mocks hid a bug",
            ),
            ("Fast loop", "pytest -x -m 'not slow' runs the unit tests in under 10 seconds"),
            ("Flaky test", "test_upload_retry is flaky on CI because of a 1 s sleep"),
        ],
    ),
    (
        "Docker",
        "reference",
        "docker compose files for local dev; images pushed to ghcr.io/acme",
        [
            ("Compose", "docker compose -f compose.dev.yml up starts api, db and redis"),
            ("Registry", "images are pushed to ghcr.io/acme/api with the git sha as tag"),
        ],
    ),
    (
        "Logging",
        "feedback",
        "Structured JSON logging with structlog; never log request bodies",
        [
            ("structlog", "use structlog.get_logger(__name__) and key=value fields"),
            ("Privacy", "request bodies may hold personal data: never log them"),
        ],
    ),
    (
        "Performance",
        "project",
        "The search endpoint must answer in 200 ms p95; N+1 queries fixed with selectinload",
        [
            ("Latency budget", "GET /search p95 must stay under 200 ms"),
            (
                "N+1 queries",
                "the orders list did one query per item; fixed with selectinload(Order.items)",
            ),
        ],
    ),
    (
        "Git Workflow",
        "user",
        "The user prefers small commits, rebase over merge, and conventional commit messages",
        [
            ("Rebase", "rebase feature branches on main; no merge commits"),
            ("Commit messages", "conventional commits: feat:, fix:, docs:, chore:"),
        ],
    ),
    (
        "Monitoring",
        "reference",
        "Grafana dashboards and Sentry for errors; alerts go to the #ops Slack channel",
        [
            ("Sentry", "errors are reported to Sentry project acme-api"),
            ("Dashboards", "Grafana dashboard 'API overview' shows latency and error rate"),
        ],
    ),
    (
        "Payments",
        "project",
        "Stripe integration: webhooks verified with the signing secret; amounts in cents",
        [
            ("Webhooks", "verify the Stripe-Signature header before handling a webhook event"),
            ("Amounts", "all amounts are integers in cents; never floats"),
        ],
    ),
    (
        "Caching",
        "feedback",
        "Redis cache with 5 minute TTL for product pages; invalidate on product update",
        [
            ("TTL", "product pages are cached in Redis for 300 seconds"),
            ("Invalidation", "ProductService.update deletes the cache key product:<id>"),
        ],
    ),
    (
        "Email",
        "reference",
        "Transactional email goes through Postmark; templates in templates/email",
        [
            ("Provider", "Postmark sends transactional email; the server token is in Vault"),
            ("Templates", "Jinja templates under templates/email, one per message type"),
        ],
    ),
    (
        "Localization",
        "project",
        "Translations with gettext; French and German supported, strings in locale/",
        [
            ("Extracting strings", "make messages runs pybabel extract into locale/messages.pot"),
            ("Languages", "fr and de are supported; en is the source language"),
        ],
    ),
    (
        "Team",
        "user",
        "The user is a backend engineer, new to React, who likes short explanations",
        [
            ("Role", "backend engineer, strong in Python and SQL, new to React"),
            ("Explanations", "prefers short answers with a code example over long prose"),
        ],
    ),
    (
        "Feature Flags",
        "project",
        "Feature flags in LaunchDarkly; new checkout behind flag checkout-v2",
        [
            ("Checkout v2", "the new checkout is behind the LaunchDarkly flag checkout-v2"),
            ("Cleanup", "remove a flag within two weeks of full rollout"),
        ],
    ),
    (
        "Search Engine",
        "project",
        "Product search uses OpenSearch with a custom analyzer for SKUs",
        [
            ("Analyzer", "the sku_analyzer keeps dashes so SKU-123-A matches exactly"),
            ("Reindex", "scripts/reindex.py rebuilds the products index with zero downtime"),
        ],
    ),
    (
        "CI Pipeline",
        "reference",
        "GitHub Actions: lint, tests and build on every PR; deploy job on main",
        [
            ("Workflows", ".github/workflows/ci.yml runs ruff, mypy and pytest on every PR"),
            ("Cache", "the CI caches ~/.cache/pip keyed on requirements.lock"),
        ],
    ),
]

# prompt -> the slugs that should surface (the first one must)
RELEVANT: list[tuple[str, list[str]]] = [
    ("I can't ssh into the staging server, connection refused", ["debugging-tips"]),
    ("the staging database keeps saying MySQL server has gone away", ["debugging-tips"]),
    ("how do I publish a new version to PyPI?", ["release-process"]),
    ("add a migration that adds an email column to users", ["database-migrations"]),
    ("npm run build fails with a vite error", ["frontend-build"]),
    ("users get logged out randomly when the access token expires", ["authentication"]),
    ("write integration tests for the order repository", ["testing"]),
    ("the docker compose stack doesn't start redis", ["docker"]),
    ("add logging to the checkout handler", ["logging"]),
    ("the search endpoint got slow, p95 is 800ms", ["performance", "search-engine"]),
    ("write a commit message for this change", ["git-workflow"]),
    ("handle the Stripe webhook for refunds", ["payments"]),
    ("product page shows a stale price after an update", ["caching"]),
    ("send a password reset email", ["email"]),
    ("add German translations for the new settings page", ["localization"]),
    ("explain how this React hook works", ["team"]),
    ("roll out the new checkout to all users", ["feature-flags"]),
    ("SKU search doesn't match codes with dashes", ["search-engine"]),
    ("the GitHub Actions workflow fails on mypy", ["ci-pipeline"]),
    ("where do production errors get reported?", ["monitoring"]),
    ("format this file the way I like", ["code-style"]),
]

# Prompts whose nearest topic is arguably relevant: not asserted either way.
BORDERLINE: list[str] = ["translate 'good morning' into Japanese"]

IRRELEVANT: list[str] = [
    "what is the capital of Australia?",
    "write a haiku about autumn",
    "thanks, that's all for today",
    "explain the difference between TCP and UDP",
    "what's 17 times 23?",
    "summarise the plot of Hamlet",
    "recommend a good book about sailing",
    "how tall is Mount Everest?",
    "tell me a joke about cats",
    "convert 5 miles to kilometres",
    "what year did the Berlin wall fall?",
]


def build_store(mem: Memory, topics: list[tuple[str, str, str, list[tuple[str, str]]]]) -> None:
    """Topic files written as ``memory_topic add`` would, then one index run."""
    store = mem.scope.store
    (store / "topics").mkdir(parents=True, exist_ok=True)
    for topic, kind, description, entries in topics:
        slug = store_topics.slugify(topic)
        parsed = store_topics.TopicFile()
        for key, value in (
            ("name", topic),
            ("description", description),
            ("type", kind),
            ("updated", "2026-11-01"),
        ):
            parsed.set(key, value)
        for title, content in entries:
            parsed.append_entry(title, content)
        store_topics.topic_path(store, slug).write_text(parsed.render(), encoding="utf-8")
    store_topics.rebuild_index(store)
    mem.sync()


@pytest.fixture(scope="module")
def model_mem(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Iterator[Memory]:
    """One store with the bundled model, indexed once for the module.

    Module-scoped fixtures run before the per-test environment isolation,
    so this one isolates itself (home and model cache) and restores after.
    """
    import os

    names = ("MEMLANE_HOME", "MEMLANE_EMBEDDING_PROVIDER", "MEMLANE_CACHE_DIR")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["MEMLANE_HOME"] = str(tmp_path_factory.mktemp("surf-home"))
    os.environ["MEMLANE_CACHE_DIR"] = str(shared_cache)
    os.environ.pop("MEMLANE_EMBEDDING_PROVIDER", None)
    try:
        mem = open_memory(make_project(tmp_path_factory.mktemp("surf")), lexical=False)
        build_store(mem, TOPICS)
        assert mem.embedding.embedder is not None
        yield mem
        mem.close()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def warm(model_mem: Memory) -> S.TopicSurfacer:
    """A surfacer with its cards embedded; selection does not change its state."""
    surfacer = S.TopicSurfacer(settings())
    surfacer.warm(model_mem)
    return surfacer


def settings(**changes: object) -> TopicSettings:
    from dataclasses import replace

    return replace(TopicSettings(), **changes)  # type: ignore[arg-type]


# --- selection ------------------------------------------------------------------------------


@pytest.mark.parametrize(("prompt", "expected"), RELEVANT)
def test_relevant_prompts_surface_their_topic(
    model_mem: Memory, warm: S.TopicSurfacer, prompt: str, expected: list[str]
) -> None:
    surfacer = warm
    chosen = surfacer.select(model_mem, prompt)
    assert expected[0] in chosen, (chosen, [c.to_json() for c in surfacer.last_candidates[:4]])
    # Precise: what else surfaces is few, never the whole store.
    assert len(chosen) <= 3


@pytest.mark.parametrize("prompt", IRRELEVANT)
def test_irrelevant_prompts_surface_nothing(
    model_mem: Memory, warm: S.TopicSurfacer, prompt: str
) -> None:
    surfacer = warm
    assert surfacer.select(model_mem, prompt) == [], [
        c.to_json() for c in surfacer.last_candidates[:3]
    ]


def test_max_files_caps_the_selection(model_mem: Memory) -> None:
    prompt = (
        "deploy checklist: run the CI pipeline, tag the PyPI release, apply the alembic "
        "migration, clear the Redis cache, check Sentry and the Grafana dashboard, "
        "flip the LaunchDarkly flag"
    )
    assert len(S.TopicSurfacer(settings()).select(model_mem, prompt)) == 5  # of 7 topics named
    assert len(S.TopicSurfacer(settings(auto_surfacing_max_files=2)).select(model_mem, prompt)) == 2


def test_dedup_across_prompts(model_mem: Memory) -> None:
    surfacer = S.TopicSurfacer(settings())
    first = surfacer.surface(model_mem, "I can't ssh into the staging server")
    assert first.slugs and first.slugs[0] == "debugging-tips"
    # Not marked until the caller says the text reached the host.
    again = surfacer.surface(model_mem, "ssh to staging fails again")
    assert again.slugs and again.slugs[0] == "debugging-tips"
    surfacer.mark_injected(first.slugs)
    later = surfacer.surface(model_mem, "ssh to staging fails again")
    assert "debugging-tips" not in later.slugs
    assert surfacer.select(model_mem, "ssh staging", already=set())[0] == "debugging-tips"
    surfacer.forget_injected()
    assert surfacer.surface(model_mem, "ssh to staging fails").slugs[0] == "debugging-tips"


def test_disabled_surfaces_nothing(model_mem: Memory) -> None:
    off = S.TopicSurfacer(settings(auto_surfacing_enabled=False))
    assert off.surface(model_mem, "I can't ssh into the staging server").text is None
    layer_off = S.TopicSurfacer(settings(enabled=False))
    assert layer_off.surface(model_mem, "I can't ssh into the staging server").text is None


def test_a_changed_topic_file_is_seen_at_the_next_prompt(project: Path, clock: FixedClock) -> None:
    mem = open_memory(project, clock=clock, lexical=False)
    try:
        build_store(mem, TOPICS[:3])
        surfacer = S.TopicSurfacer(settings())
        assert surfacer.warm(mem) == 3
        assert surfacer.select(mem, "the kubernetes ingress returns 502") == []
        store_topics.add(
            mem.scope.store,
            content="the ingress-nginx controller needs proxy-body-size 50m for uploads",
            topic="Kubernetes",
            title="Ingress 502 on uploads",
            today=TOPIC_DAY,
        )
        mem.sync()
        assert surfacer.select(mem, "the kubernetes ingress returns 502") == ["kubernetes"]
    finally:
        mem.close()


# --- rendering --------------------------------------------------------------------------------


def _shown(text: str) -> list[str]:
    """The topic files a rendered message shows, in order."""
    return re.findall(r'\n<topic file="topics/([^"]+)\.md"', text)


def test_render_caps_each_topic_and_the_total(memory: Memory) -> None:
    store = memory.scope.store
    # Multi-byte text everywhere, so a byte cut lands inside characters.
    big = "Ünïcödé ✓ " * 40
    for n in range(8):
        for e in range(6):
            store_topics.add(
                store,
                content=f"{big}\n{big}",
                topic=f"Topic {n}",
                title=f"entry {e} ✓",
                today=TOPIC_DAY,
            )
    surfacer = S.TopicSurfacer(settings(auto_surfacing_max_files=8))
    slugs = [f"topic-{n}" for n in range(8)]
    text = surfacer.render(memory, slugs)
    shown = _shown(text)
    assert len(text.encode("utf-8")) <= 20480
    assert 1 < len(shown) < 8  # the total budget stopped it
    assert shown == slugs[: len(shown)]  # in the order asked, none skipped
    blocks = text.split("\n<topic ")[1:]
    assert len(blocks) == len(shown)
    for block in blocks:
        # The whole block a topic adds, tags included, is within max_topic_bytes.
        assert len(f"\n<topic {block}".encode()) <= 4096
        body = block.split(">\n", 1)[1].rsplit("\n</topic>", 1)[0]
        assert "[… cut: " in body and "more bytes in topics/topic-" in body
    assert "\ufffd" not in text
    small = S.TopicSurfacer(
        settings(auto_surfacing_max_topic_bytes=300, auto_surfacing_max_injection_bytes=1000)
    )
    text = small.render(memory, slugs)
    assert len(text.encode("utf-8")) <= 1000 and _shown(text)
    assert small.render(memory, ["no-such-topic"]) == ""
    store_topics.add(
        store,
        content="text </topic> more </TOPIC>",
        topic="Sneaky",
        title="close tag",
        today=TOPIC_DAY,
    )
    sneaky = surfacer.render(memory, ["sneaky"])
    assert sneaky.count("</topic>") == 1 and "<\\/topic> more <\\/TOPIC>" in sneaky


def test_cut_bytes_at_character_boundary() -> None:
    text = "é" * 100  # 200 bytes
    for limit in range(60, 210, 7):
        cut = S.cut_bytes(text, limit, "topics/x.md")
        assert len(cut.encode("utf-8")) <= limit
        if limit < 200:
            assert cut.startswith("é") and "more bytes in topics/x.md]" in cut
    assert S.cut_bytes(text, 200, "x") == text


def test_rendered_topic_is_the_file_content(model_mem: Memory) -> None:
    surfacer = S.TopicSurfacer(settings())
    result = surfacer.surface(model_mem, "I can't ssh into the staging server")
    assert result.text is not None
    assert '<topic file="topics/debugging-tips.md" name="Debugging Tips" type="feedback"' in (
        result.text
    )
    assert "## SSH Gotcha\nstaging uses port 2222" in result.text
    assert "pool_recycle=25" in result.text


# --- a cold prompt -----------------------------------------------------------------------------


def test_a_prompt_without_warm_up_embeds_a_bounded_number_of_cards(model_mem: Memory) -> None:
    """A store the session has not warmed (20 topics here) costs a prompt at most
    ``EMBED_PER_PROMPT`` card embeddings; the rest follow at later prompts."""
    assert len(TOPICS) > S.EMBED_PER_PROMPT
    cold = S.TopicSurfacer(settings())
    assert cold.embedded_cards == 0
    first = cold.surface(model_mem, RELEVANT[0][0])
    assert cold.embedded_cards == S.EMBED_PER_PROMPT
    assert first.slugs and first.slugs[0] == RELEVANT[0][1][0]  # lexical evidence carries it
    cold.surface(model_mem, RELEVANT[1][0])
    assert cold.embedded_cards == len(TOPICS)
    warm = S.TopicSurfacer(settings())
    assert warm.warm(model_mem) == len(TOPICS) == warm.embedded_cards


# --- the LLM side query -------------------------------------------------------------------------


def _llm(base_url: str) -> object:
    from memlane.core.settings import LlmSettings
    from memlane.llm.factory import make_llm

    return make_llm(LlmSettings(provider="openai", base_url=base_url, model="fake-model"))


def test_rerank_reorders_within_the_deadline(model_mem: Memory) -> None:
    prompt = "add logging to the checkout handler"
    assert S.TopicSurfacer(settings()).select(model_mem, prompt)[:2] == ["feature-flags", "logging"]
    with FakeOpenAI(answer='["logging.md"]') as server:
        surfacer = S.TopicSurfacer(
            settings(auto_surfacing_model="fake-model"), llm=_llm(server.base_url)
        )
        result = surfacer.surface(model_mem, prompt, deadline=time.monotonic() + 5)
        assert result.reranked == "llm"
        assert result.slugs == ["logging"]
        sent = server.requests[0].body["messages"][-1]["content"]
        assert prompt in sent and "feature-flags.md" in sent


def test_slow_reranker_never_blocks_past_the_deadline(model_mem: Memory) -> None:
    prompt = "I can't ssh into the staging server, connection refused"
    # The server would pick frontend-build, a minute from now (leaving the
    # block wakes it): a surfacer that waited for it would rank that first.
    with FakeOpenAI(answer='["frontend-build.md"]', delay_s=60.0) as server:
        surfacer = S.TopicSurfacer(
            settings(auto_surfacing_model="fake-model"), llm=_llm(server.base_url)
        )
        surfacer.warm(model_mem)  # selection itself must leave the side query its time
        result = surfacer.surface(model_mem, prompt, deadline=time.monotonic() + 1.0)
    # The side query ran (there was time left for it) and was abandoned at the
    # deadline: by the surfacer's own wait, or by the provider's timeout (it is
    # given the same deadline) if that fires first.
    assert result.reranked is not None
    assert result.reranked == "side query timed out" or result.reranked.startswith(
        "side query failed"
    ), result.reranked
    assert result.slugs[0] == "debugging-tips"  # the retrieval order


def test_bad_rerank_answers_fall_back(model_mem: Memory) -> None:
    prompt = "I can't ssh into the staging server, connection refused"
    with FakeOpenAI(answer="I think the SSH one") as server:
        surfacer = S.TopicSurfacer(
            settings(auto_surfacing_model="fake-model"), llm=_llm(server.base_url)
        )
        deadline = time.monotonic() + 5
        result = surfacer.surface(model_mem, prompt, deadline=deadline)
        assert result.reranked == "side query answer unusable"
        assert result.slugs[0] == "debugging-tips"
        server.set(status=500)
        result = surfacer.surface(model_mem, prompt, deadline=time.monotonic() + 5)
        assert result.reranked is not None and result.reranked.startswith("side query failed")
        assert result.slugs[0] == "debugging-tips"
        server.set(status=200, answer="[]")
        assert surfacer.surface(model_mem, prompt, deadline=time.monotonic() + 5).text is None
    # No model configured for surfacing: the LLM is never asked.
    unused = S.TopicSurfacer(settings(), llm=_llm("http://127.0.0.1:9/v1"))
    assert unused.llm is None


def test_parse_rerank() -> None:
    allowed = ["a", "b-c"]
    assert S.parse_rerank('```json\n["b-c.md", "a"]\n```', allowed) == ["b-c", "a"]
    assert S.parse_rerank('["topics/a.md", "a", "zzz"]', allowed) == ["a"]
    assert S.parse_rerank("[]", allowed) == []
    assert S.parse_rerank('["zzz"]', allowed) is None
    assert S.parse_rerank("[1, 2]", allowed) is None
    assert S.parse_rerank("none", allowed) is None


# --- snapshot block ---------------------------------------------------------------------------


def test_memory_index_block(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert S.memory_index_block(store, settings()) is None
    store_topics.add(
        store, content="port 2222", topic="Debugging", title="SSH Gotcha", today=TOPIC_DAY
    )
    block = S.memory_index_block(store, settings())
    assert block is not None
    assert block.startswith("## Curated topics (MEMORY.md)\n")
    assert block.endswith("- [Debugging](topics/debugging.md) — SSH Gotcha")
    assert S.memory_index_block(store, settings()) == block  # byte-stable
    for n in range(5):
        store_topics.add(store, content="x", topic=f"T{n}", title=f"t{n}", today=TOPIC_DAY)
    cut = S.memory_index_block(store, settings(mem_index_max_lines=2))
    assert cut is not None and cut.endswith("[truncated]")
    assert cut.count("\n- [") == 2
    assert S.memory_index_block(store, settings(enabled=False)) is None


# --- calibration ---------------------------------------------------------------------------------


def calibrate() -> None:  # pragma: no cover - a tool, run by hand
    """Print each prompt's top candidates and the separation the floors give."""
    import os
    import tempfile

    os.environ["MEMLANE_HOME"] = tempfile.mkdtemp()
    mem = open_memory(make_project(Path(tempfile.mkdtemp())), lexical=False)
    build_store(mem, TOPICS)
    surfacer = S.TopicSurfacer(settings())
    surfacer.warm(mem)
    rights, wrongs, noise = [], [], []
    for prompt, expected in RELEVANT:
        cands = surfacer.candidates(mem, prompt)
        right = next((c for c in cands if c.slug == expected[0]), None)
        wrong = next((c for c in cands if c.slug not in expected), None)
        rights.append(right)
        wrongs.append(wrong)
        print(f"R {prompt[:44]:44} {right.to_json() if right else None}")
        print(f"  {'':44} {wrong.to_json() if wrong else None}")
    for prompt in IRRELEVANT:
        cands = surfacer.candidates(mem, prompt)
        noise.append(cands[0] if cands else None)
        print(f"I {prompt[:44]:44} {cands[0].to_json() if cands else None}")
    for prompt in BORDERLINE:
        cands = surfacer.candidates(mem, prompt)
        print(f"B {prompt[:44]:44} {cands[0].to_json() if cands else None}")
    for label, group in (("right", rights), ("best wrong", wrongs), ("irrelevant", noise)):
        got = [c for c in group if c is not None]
        passing = sum(1 for c in got if c.score >= S.SCORE_FLOOR and c.evidence >= S.EVIDENCE_FLOOR)
        print(
            f"{label:10} score {min(c.score for c in got):.3f}..{max(c.score for c in got):.3f}"
            f" evidence {min(c.evidence for c in got):.3f}..{max(c.evidence for c in got):.3f}"
            f" passing {passing}/{len(group)}"
        )
    mem.close()


if __name__ == "__main__":  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    calibrate()
