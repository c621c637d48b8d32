"""encode_id: safe, bounded, injective directory names for user and agent ids."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memfold.store._ids import DEFAULT_USER_DIR, encode_id, validate_id

NAME = re.compile(r"[a-z0-9_][a-z0-9_-]{0,39}-[0-9a-f]{24}")
ids = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1)


@given(ids)
def test_names_are_safe_bounded_lowercase_and_never_the_default_dir(value: str) -> None:
    name = encode_id(value)
    assert NAME.fullmatch(name), name
    assert len(name.encode()) <= 65
    assert name != DEFAULT_USER_DIR
    assert name not in (".", "..")


@given(ids, ids)
def test_distinct_ids_get_distinct_names_even_ignoring_case(a: str, b: str) -> None:
    if a != b:
        assert encode_id(a).lower() != encode_id(b).lower()


@pytest.mark.parametrize(
    ("a", "b"), [("Alice", "alice"), ("a/b", "a_b"), ("a/b", "a%2Fb"), ("x" * 300, "x" * 299 + "y")]
)
def test_lookalike_ids_get_distinct_names(a: str, b: str) -> None:
    assert encode_id(a) != encode_id(b)


def test_names_are_stable_and_readable() -> None:
    assert encode_id("alice@example.com") == encode_id("alice@example.com")
    assert encode_id("alice@example.com").startswith("alice_example_com-")
    assert encode_id("-rf").startswith("_rf-")


def test_validate_id_explains_each_rejection() -> None:
    with pytest.raises(ValueError, match="agent must not be empty: use None"):
        validate_id("", "agent")
    with pytest.raises(ValueError, match="contains a NUL"):
        validate_id("a\x00", "user_id")
    with pytest.raises(ValueError, match="not valid Unicode"):
        validate_id("\ud800", "user_id")
    with pytest.raises(TypeError, match="got bytes"):
        validate_id(b"alice", "user_id")
    assert validate_id("ok", "user_id") == "ok"
