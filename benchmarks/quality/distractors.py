"""Distractor messages for LoCoMo at scale: what a long-lived store also holds.

``distractors(n, seed)`` yields ``n`` short texts (one or two sentences),
deterministic for a seed, each the first ``n`` of any longer run: coding-agent
messages (fixes, test runs, reviews, decisions), chat about people's lives
(hobbies, trips, pets, family, events, on dates) and meeting notes, drawn
from templates over a broad vocabulary. Common first names, places, hobbies
and months overlap LoCoMo's questions on purpose: a distractor has to
compete with the conversation's turns for the same words and meanings.

``VectorCache`` keeps their vectors on disk (outside the repository), keyed
by the embedding input's text and the vector space, so a re-run embeds
nothing and costs only the index build.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

# fmt: off
NAMES = (
    "Alice", "Andrew", "Angela", "Anna", "Ben", "Brian", "Caroline", "Carlos", "Chen", "Chloe",
    "Daniel", "David", "Deborah", "Diego", "Elena", "Emily", "Emma", "Ethan", "Fatima", "Felix",
    "Gina", "George", "Grace", "Hannah", "Hiro", "Isaac", "Isabel", "Jack", "James", "Jane",
    "Joanna", "Jolene", "Jon", "John", "Jose", "Julia", "Karen", "Kate", "Kevin", "Laura",
    "Leo", "Liam", "Linda", "Lucas", "Maria", "Mark", "Melanie", "Mia", "Michael", "Nadia",
    "Nate", "Nina", "Noah", "Olivia", "Omar", "Priya", "Rachel", "Raj", "Rosa", "Ryan",
    "Sam", "Samir", "Sara", "Sophie", "Tim", "Tom", "Tyler", "Victor", "Wei", "Yuki", "Zoe",
    "Audrey", "Andre", "Calvin", "Dave", "Deborah", "Evan", "Gabriel", "Maya", "Oscar",
)
RELATIONS = (
    "sister", "brother", "mom", "dad", "grandma", "cousin", "best friend", "neighbor",
    "partner", "son", "daughter", "roommate", "coworker", "aunt", "uncle", "kids",
)
PLACES = (
    "Paris", "Tokyo", "Seattle", "Boston", "Chicago", "Lisbon", "Berlin", "Toronto", "Denver",
    "Austin", "Rome", "Barcelona", "Dublin", "Sydney", "Vancouver", "the lake", "the beach",
    "the mountains", "the park", "the museum", "the library", "the farmers market",
    "the old town", "the coast", "Yosemite", "the countryside", "Florida", "California",
    "New York", "Sweden", "Canada", "Japan", "Mexico", "the gym", "the community center",
)
HOBBIES = (
    "painting", "pottery", "hiking", "running", "yoga", "baking", "camping", "gardening",
    "photography", "rock climbing", "swimming", "cycling", "knitting", "chess", "surfing",
    "playing the violin", "playing the guitar", "writing poems", "reading fantasy novels",
    "bird watching", "volunteering", "skateboarding", "dancing", "video games", "fishing",
    "woodworking", "calligraphy", "board games", "cooking Thai food", "sketching",
)
ACTIVITIES = (
    "went hiking", "went camping", "went to a concert", "ran a 5k", "visited a gallery",
    "took a pottery class", "went to a pride parade", "adopted a dog", "started a new job",
    "went to a workshop", "joined a book club", "painted a sunset", "baked a cake",
    "went on a road trip", "watched a movie", "signed up for a marathon", "went skiing",
    "attended a wedding", "had a picnic", "went to a support group", "took a dance class",
    "bought a new car", "moved to a new apartment", "planted tomatoes", "went to the zoo",
)
PETS = ("dog", "cat", "puppy", "kitten", "turtle", "parrot", "rabbit", "hamster", "goldfish")
PET_NAMES = ("Max", "Luna", "Bella", "Oliver", "Charlie", "Milo", "Daisy", "Coco", "Rocky")
EVENTS = (
    "birthday", "graduation", "wedding", "anniversary", "charity race", "family reunion",
    "art show", "school play", "job interview", "doctor's appointment", "housewarming",
    "conference talk", "camping trip", "game night", "bake sale", "recital",
)
FEELINGS = (
    "excited", "nervous", "proud", "tired", "relieved", "happy", "stressed", "grateful",
    "inspired", "calm", "overwhelmed", "thrilled",
)
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MODULES = (
    "the parser", "the scheduler", "the auth middleware", "the billing service", "the CLI",
    "the config loader", "the cache layer", "the search index", "the upload handler",
    "the migration script", "the websocket server", "the retry loop", "the logger",
    "the payment webhook", "the rate limiter", "the date formatter", "the export job",
    "the session store", "the image resizer", "the notification queue", "the API client",
)
BUGS = (
    "race condition", "off-by-one error", "memory leak", "null pointer", "timezone bug",
    "flaky test", "deadlock", "encoding error", "stale cache entry", "slow query",
    "unicode crash", "missing index", "wrong default", "broken import", "timeout",
)
FIXES = (
    "adding a lock", "retrying with backoff", "pinning the dependency", "adding an index",
    "normalising the input", "injecting the clock", "splitting the function",
    "using a context manager", "batching the writes", "escaping the query",
    "reading the file lazily", "caching the result", "validating the schema",
)
TOOLS = (
    "pytest", "mypy", "ruff", "the linter", "the benchmark", "the CI pipeline", "git bisect",
    "the profiler", "docker compose", "the load test", "npm test", "cargo test", "tsc",
)
TECH = (
    "Python", "TypeScript", "Rust", "Go", "SQLite", "Postgres", "Redis", "Kafka", "React",
    "Docker", "Kubernetes", "GraphQL", "FastAPI", "Django", "numpy", "onnxruntime", "Terraform",
)
IDENTIFIERS = (
    "load_config", "parse_date", "UserSession", "retry_policy", "fetch_items", "BatchWriter",
    "render_page", "token_bucket", "resolve_path", "IndexStats", "send_email", "check_auth",
)
TOPICS = (
    "the release plan", "the roadmap", "on-call rotation", "the database migration",
    "the hiring pipeline", "the budget", "the design review", "the security audit",
    "the onboarding docs", "the Q3 goals", "the API deprecation", "the outage postmortem",
    "the conference trip", "the team offsite", "the customer feedback", "the new dashboard",
)
ACTIONS = (
    "write a proposal", "ship the fix", "update the docs", "run the benchmark again",
    "ask legal", "split the ticket", "pair on it", "revert the change", "add more tests",
    "draft the announcement", "book the venue", "measure it on the big store",
)
# fmt: on


def _day(rng: random.Random) -> str:
    return f"{rng.choice(MONTHS)} {rng.randint(1, 28)}"


def _coding(rng: random.Random) -> str:
    c = rng.choice
    templates = (
        lambda: f"Fixed the {c(BUGS)} in {c(MODULES)} by {c(FIXES)}.",
        lambda: (
            f"Ran {c(TOOLS)} on {c(MODULES)}: {rng.randint(1, 40)} failures, "
            f"all from the {c(BUGS)}."
        ),
        lambda: (
            f"{c(NAMES)} asked to rename {c(IDENTIFIERS)} to {c(IDENTIFIERS)} "
            f"before the {c(MONTHS)} release."
        ),
        lambda: (
            f"Decided to keep {c(TECH)} for {c(MODULES)}; {c(TECH)} was slower in the benchmark."
        ),
        lambda: (
            f"Review of {c(NAMES)}'s change to {c(MODULES)}: looks fine, "
            f"but {c(IDENTIFIERS)} needs a test for the {c(BUGS)}."
        ),
        lambda: (
            f"The {c(BUGS)} in {c(MODULES)} is back; {c(NAMES)} thinks it started "
            f"after the {c(TECH)} upgrade."
        ),
        lambda: f"Moved {c(IDENTIFIERS)} out of {c(MODULES)} so {c(TOOLS)} stops complaining.",
        lambda: f"TODO: {c(ACTIONS)} for {c(MODULES)} by {c(WEEKDAYS)}.",
        lambda: (
            f"{c(TOOLS)} takes {rng.randint(2, 90)} seconds now; most of it is "
            f"{c(MODULES)} waiting on {c(TECH)}."
        ),
    )
    return c(templates)()


def _life(rng: random.Random) -> str:
    c = rng.choice
    templates = (
        lambda: f"{c(NAMES)} {c(ACTIVITIES)} in {c(PLACES)} last {c(WEEKDAYS)}.",
        lambda: (
            f"{c(NAMES)} is planning a trip to {c(PLACES)} in {c(MONTHS)} "
            f"with their {c(RELATIONS)}."
        ),
        lambda: f"{c(NAMES)} has been into {c(HOBBIES)} lately and feels {c(FEELINGS)} about it.",
        lambda: f"{c(NAMES)} adopted a {c(PETS)} named {c(PET_NAMES)} on {_day(rng)}.",
        lambda: f"Reminder: {c(NAMES)}'s {c(EVENTS)} is on {_day(rng)} in {c(PLACES)}.",
        lambda: f"{c(NAMES)} told me their {c(RELATIONS)} {c(ACTIVITIES)} and was {c(FEELINGS)}.",
        lambda: (
            f"{c(NAMES)} started {c(HOBBIES)} after the {c(EVENTS)}; says it helps with stress."
        ),
        lambda: (
            f"{c(NAMES)} and {c(NAMES)} went to {c(PLACES)} for the {c(EVENTS)} on {_day(rng)}."
        ),
        lambda: f"{c(NAMES)}: I'm so {c(FEELINGS)}, I finally {c(ACTIVITIES)}!",
        lambda: f"{c(NAMES)} recommended a book about {c(HOBBIES)} to their {c(RELATIONS)}.",
    )
    return c(templates)()


def _meeting(rng: random.Random) -> str:
    c = rng.choice
    templates = (
        lambda: f"Met with {c(NAMES)} about {c(TOPICS)}; agreed to {c(ACTIONS)} by {_day(rng)}.",
        lambda: f"{c(NAMES)} will present {c(TOPICS)} on {c(WEEKDAYS)}, {c(NAMES)} takes notes.",
        lambda: (
            f"Standup: {c(NAMES)} is blocked on {c(MODULES)}, {c(NAMES)} is out "
            f"until {_day(rng)} for a {c(EVENTS)}."
        ),
        lambda: f"Notes from {c(TOPICS)}: {c(ACTIONS)}, then {c(ACTIONS)}.",
    )
    return c(templates)()


# Stand-ins for the names a run avoids (first names of nobody in NAMES).
SPARE_NAMES = (
    "Aiden", "Bianca", "Cyrus", "Dalia", "Edgar", "Farah", "Gustav", "Helga", "Ivo", "Jasper",
    "Kiara", "Lorenzo", "Mireille", "Nikolai", "Odette", "Pavel", "Quentin", "Rowan",
)  # fmt: skip


#: 0.35: 94 characters on average (LoCoMo's turns: 133); 0.9: 132.
SECOND_SENTENCE = 0.35


def name_swaps(avoid: Iterable[str]) -> dict[str, str]:
    """Each avoided name of ``NAMES`` -> a spare name, deterministically."""
    chosen = sorted(set(avoid) & set(NAMES))
    return {name: SPARE_NAMES[i % len(SPARE_NAMES)] for i, name in enumerate(chosen)}


def distractors(
    n: int, seed: int = 32, avoid: Iterable[str] = (), second: float | None = None
) -> Iterator[tuple[str, str]]:
    """``n`` (``HH:MM``, text) pairs; a longer run starts with a shorter one's.

    ``avoid``: names that no distractor mentions (a conversation's speakers:
    thousands of messages about another "Jon" would not be distractors but
    rival facts about him); each is replaced by a spare name, so every other
    text is the same as without ``avoid``. ``second``: the share of texts
    with a second sentence (``SECOND_SENTENCE``).
    """
    second = SECOND_SENTENCE if second is None else second
    swaps = name_swaps(avoid)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, swaps)) + r")\b") if swaps else None
    rng = random.Random(seed)
    kinds = (_coding, _coding, _life, _life, _life, _meeting)
    for _ in range(n):
        text = rng.choice(kinds)(rng)
        if rng.random() < second:  # a second sentence, of any kind
            text += " " + rng.choice(kinds)(rng)
        if pattern is not None:
            text = pattern.sub(lambda m: swaps[m.group(1)], text)
        yield f"{rng.randint(7, 23):02d}:{rng.randint(0, 59):02d}", text


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/memlane-bench`` (``~/.cache/memlane-bench``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memlane-bench"


class VectorCache:
    """Vectors by (vector space, embedding input), in shards under ``root``."""

    def __init__(self, space: str, root: Path | None = None) -> None:
        digest = hashlib.sha256(space.encode("utf-8")).hexdigest()[:16]
        self.dir = (root or cache_root()) / "distractor-vectors" / digest
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "space.txt").write_text(space + "\n", encoding="utf-8")
        self.vectors: dict[str, np.ndarray] = {}
        for shard in sorted(self.dir.glob("shard-*.npz")):
            with np.load(shard) as data:
                for key, vector in zip(data["keys"], data["vectors"], strict=True):
                    self.vectors[str(key)] = vector
        self._pending: dict[str, np.ndarray] = {}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def get(self, text: str) -> np.ndarray | None:
        return self.vectors.get(self.key(text))

    def put(self, text: str, vector: np.ndarray) -> None:
        key = self.key(text)
        self.vectors[key] = vector
        self._pending[key] = vector

    def missing(self, texts: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))

    def flush(self) -> None:
        """Write what was added since the last flush as one new shard."""
        if not self._pending:
            return
        n = len(list(self.dir.glob("shard-*.npz")))
        name = f"shard-{n:05d}-{os.getpid()}"  # two writers never share a name
        keys = np.array(list(self._pending), dtype="U32")
        vectors = np.stack(list(self._pending.values())).astype(np.float32)
        tmp = self.dir / f".{name}.tmp.npz"
        np.savez(tmp, keys=keys, vectors=vectors)
        tmp.replace(self.dir / f"{name}.npz")
        self._pending = {}
