"""Hypothesis-generated extractor replies through the queue worker: no exception escapes,
the document always validates, and the revision moves only with a real change."""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfold import Memory, MemoryConfig
from memfold.model import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    MemoryDocument,
    document_from_dict,
    document_to_dict,
)
from memfold.testing import InMemoryStore, ScriptedChatModel

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
labels = st.sampled_from(["user", "task", "durable", "temporary", "", "USER"]) | json_values
section = st.fixed_dictionaries(
    {},
    optional={
        "shouldUpdate": st.booleans() | json_values,
        "summary": st.text(max_size=60) | json_values,
        "scope": labels,
        "durability": labels,
    },
)
new_fact = st.fixed_dictionaries(
    {"content": st.text(max_size=60) | json_values},
    optional={
        "category": st.sampled_from(["preference", "correction", "Goal", "weird"]) | json_values,
        "confidence": st.floats() | st.integers(-5, 150) | st.sampled_from(["0.9", "95%", "x"]),
        "scope": labels,
        "durability": labels,
        "sourceError": st.text(max_size=20) | json_values,
    },
)
removal = st.fixed_dictionaries(
    {"ref": st.sampled_from(["f1", "f2", "f3", "f9", "2", "F1"]) | json_values},
    optional={"reason": st.text(max_size=20), "replacedBy": st.integers(-2, 4) | json_values},
)
reply_object = st.fixed_dictionaries(
    {},
    optional={
        "user": st.dictionaries(st.sampled_from([*USER_SECTIONS, "bogus"]), section) | json_values,
        "history": st.dictionaries(st.sampled_from([*HISTORY_SECTIONS, "x"]), section),
        "newFacts": st.lists(new_fact, max_size=4) | json_values,
        "factsToRemove": st.lists(removal, max_size=3) | json_values,
    },
)
replies = st.one_of(
    reply_object.map(json.dumps),
    reply_object.map(lambda d: f"<think>hmm {{</think>Here:\n```json\n{json.dumps(d)}\n```"),
    st.tuples(reply_object, st.integers(0, 120)).map(lambda p: json.dumps(p[0])[: p[1]]),
    json_values.map(json.dumps),
    st.text(max_size=80),
)


def _content(doc: MemoryDocument) -> Any:
    data = document_to_dict(doc)
    return data["user"], data["history"], data["facts"]


def test_fuzzed_replies_never_break_the_worker_or_the_document(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="memfold")
    model = ScriptedChatModel()
    config = MemoryConfig(home=tmp_path, retry_attempts=1, max_facts=30)
    mem = Memory(config, store=InMemoryStore(), chat_model=model, start_workers=False)
    for text in ("Likes tea", "Lives in Porto", "Uses Vim"):
        mem.add_fact(text, user_id="u")
    turn = itertools.count()
    runs = itertools.count(1)

    @settings(
        max_examples=1000,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(reply=replies)
    def run(reply: str) -> None:
        before = mem.get(user_id="u")
        dropped_before = mem.status().dropped
        n = next(turn)
        model.add(reply)
        chat = [
            {"role": "user", "content": f"Message {n}: I like to keep notes."},
            {"role": "assistant", "content": f"Answer {n}."},
        ]
        assert mem.record(chat, thread_id="t1", user_id="u")
        assert mem.flush(timeout=10)  # no exception escaped the worker
        assert model.remaining == 0
        status = mem.status()
        assert status.processed + status.dropped == next(runs)
        after = mem.get(user_id="u")
        assert document_from_dict(document_to_dict(after)) == after
        assert len(after.facts) <= config.max_facts
        if status.dropped != dropped_before:  # an unusable reply changes nothing
            assert after == before
        if after.revision != before.revision:
            assert after.revision == before.revision + 1
            assert _content(after) != _content(before) or after.watermarks != before.watermarks
        else:
            assert after == before

    run()
    mem.close()
    assert mem.status().processed > 100  # enough replies were valid to exercise apply
