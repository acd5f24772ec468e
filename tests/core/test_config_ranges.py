"""Every setting's range is declared once (core/config/keys.py) and checked in
one place: ``config set`` refuses a bad value and writes nothing; a file or an
environment variable with one keeps memory working and says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.core.config import KEYS, Key, coerce, load_config, set_value
from memlane.core.config.reference import render_reference
from memlane.core.errors import ConfigError
from memlane.core.paths import global_config_path

REPO = Path(__file__).resolve().parents[2]
NUMERIC = [k for k in KEYS.values() if k.type in (int, float)]


def test_every_numeric_setting_has_a_range_and_every_default_is_allowed() -> None:
    assert [k.name for k in NUMERIC if k.low is None] == []
    for key in KEYS.values():
        if key.default is not None:
            assert coerce(key, key.default, None) == key.default


def test_the_declared_ranges_mean_what_their_names_say() -> None:
    for key in NUMERIC:
        assert key.low is not None
        if key.name.endswith("top_k"):
            assert key.low >= 1, key.name
        if "timeout" in key.name:
            assert key.low > 0, key.name
        if "score" in key.name or key.name == "index.alpha":
            assert (key.low, key.high) == (0, 1), key.name


def test_no_help_is_only_a_constants_name() -> None:
    """A person who never saw the source cannot read "AUTO_CONTEXT_TOP_K"."""
    constant = re.compile(r"^[A-Z]+_[A-Z0-9_]+\b")
    assert [k.name for k in KEYS.values() if constant.match(k.help)] == []


@pytest.mark.parametrize(
    ("name", "raw", "allowed"),
    [
        ("search.top_k", "0", "a whole number from 1 to 100"),
        ("search.min_score", "7", "a number from 0 to 1"),
        ("auto_context.score_floor", "-0.1", "a number from 0 to 1"),
        ("embedding.timeout_s", "0", "a number of at least 0.1"),
        ("index.alpha", "nan", "a number from 0 to 1"),
        ("search.top_k", "2.5", "a whole number from 1 to 100"),
        ("session.backoff_delays_ms", "200,-1", "whole milliseconds separated by commas"),
        ("index.collection", "../elsewhere", "letters, digits and _"),
        ("index.fusion", "best", "one of evidence, rrf, wrrf, convex"),
    ],
)
def test_config_set_refuses_a_bad_value_and_writes_nothing(
    name: str, raw: str, allowed: str
) -> None:
    path = global_config_path()
    set_value(path, "capture.enabled", "false")
    before = path.read_bytes()
    with pytest.raises(ConfigError) as caught:
        set_value(path, name, raw)
    assert caught.value.message.startswith(f"{name} = {raw!r} is not allowed: it must be {allowed}")
    assert path.read_bytes() == before


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from(NUMERIC), value=st.integers(-(10**7), 10**7) | st.floats())
def test_a_number_is_accepted_exactly_when_it_lies_in_the_range(key: Key, value: float) -> None:
    """As typed on the command line or in an environment variable."""
    whole = isinstance(value, int)  # "5.0" is no whole number there
    inside = (
        value == value  # not NaN
        and abs(value) != float("inf")
        and (key.low is None or value >= key.low)
        and (key.high is None or value <= key.high)
        and (key.type is float or whole)
    )
    try:
        got = coerce(key, str(value), None)
    except ConfigError as exc:
        assert not inside, exc.message
        assert exc.message.startswith(f"{key.name} = ")
        assert key.allowed in exc.message
    else:
        assert inside
        assert got == value


@settings(max_examples=50, deadline=None)
@given(key=st.sampled_from(NUMERIC), value=st.integers(-(10**6), -1))
def test_a_bad_environment_value_is_not_used(key: Key, value: int) -> None:
    if key.low is not None and key.low <= value:
        return
    cfg = load_config(None, env={key.env_name: str(value)})
    assert cfg.values[key.name].layer == "default"
    (problem,) = cfg.problems
    assert problem.startswith(f"${key.env_name}: {key.name} = '{value}' is not allowed")


def test_the_issue_settings_in_a_file_leave_search_working(tmp_path: Path) -> None:
    path = global_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[search]\ntop_k = 0\nmin_score = 7\n")
    cfg = load_config(tmp_path, env={})
    assert cfg.session.search_top_k == 5
    assert 0 <= cfg.session.search_min_score <= 1
    assert [p.split(" is not allowed")[0] for p in cfg.problems] == [
        f"{path}: search.top_k = 0",
        f"{path}: search.min_score = 7",
    ]


def test_the_configuration_reference_is_the_generated_one() -> None:
    committed = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == render_reference(), (
        "docs/configuration.md is out of date: run "
        "`memlane config reference > docs/configuration.md`"
    )
    for name in KEYS:
        assert f"`{name}`" in committed
