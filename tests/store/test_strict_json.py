"""Stored documents parse exactly as ``json.loads`` reads them, fast path or not."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memfold.store.base import loads_strict_json

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@given(JSON_VALUES)
def test_what_memfold_writes_reads_back_as_json_loads_reads_it(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert loads_strict_json(text) == json.loads(text)
    assert loads_strict_json(text.encode()) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "\\ud800"}',  # a lone surrogate escape: the fast parser refuses it
        "\ufeff{}".encode(),  # UTF-8 with a byte order mark
        '{"big": 123456789012345678901234567890, "tiny": 1e-400, "huge": 1e400}',
        "[" * 300 + "]" * 300,  # past the fast parser's nesting limit
        '{"a": 1, "a": 2}',
    ],
)
def test_text_the_fast_parser_refuses_still_loads_as_before(text: str | bytes) -> None:
    assert repr(loads_strict_json(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", ['{"a": NaN}', "[Infinity]", "[-Infinity]"])
def test_nan_and_infinity_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a JSON number"):
        loads_strict_json(text)


@pytest.mark.parametrize("text", ['{"a": 1} x', "[1,]", '"x\x01y"', "", '{"a": tru}'])
def test_broken_text_is_refused_with_the_standard_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_strict_json(text)


def test_nesting_too_deep_for_python_is_a_recursion_error() -> None:
    with pytest.raises(RecursionError):
        loads_strict_json("[" * 100_000 + "]" * 100_000)
