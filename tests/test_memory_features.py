"""The ``Memory`` features a first user reaches for: any LangChain chat model (B4), shared
memory under an agent's (S6), re-extraction (S2), safe import (S3), listing users."""

from __future__ import annotations

import json
import logging

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from memfold import Memory, MemoryConfig, Scope
from memfold.testing import ScriptedChatModel

DIALOGUE = [("user", "I live in Berlin and I prefer short answers."), ("assistant", "Noted.")]
REPLY = json.dumps(
    {"user": {}, "history": {},
     "newFacts": [{"content": "Lives in Berlin", "category": "context", "confidence": 0.9,
                   "scope": "user", "durability": "durable"}],
     "factsToRemove": []}
)  # fmt: skip


def _memory(tmp_path, **kw) -> Memory:
    return Memory(MemoryConfig(home=tmp_path / "home", debounce_seconds=0), **kw)


# --- B4: chat_model -------------------------------------------------------------------------


def test_a_langchain_chat_model_is_accepted_directly(tmp_path):
    model = GenericFakeChatModel(messages=iter([REPLY, REPLY]))
    with _memory(tmp_path, chat_model=model) as mem:
        assert mem.extractor_name == "llm"
        result = mem.update(DIALOGUE, thread_id="t", user_id="u")
        assert result.committed
        mem.record([*DIALOGUE, ("user", "Also I use vim."), ("assistant", "Ok.")],
                   thread_id="t2", user_id="u")  # fmt: skip
        assert mem.flush(10)
        status = mem.status()
        assert (status.failed, status.processed) == (0, 1)
        assert [f.content for f in mem.get(user_id="u").facts] == ["Lives in Berlin"]


def test_a_memfold_chat_model_is_accepted(tmp_path):
    with _memory(tmp_path, chat_model=ScriptedChatModel([REPLY])) as mem:
        assert mem.update(DIALOGUE, thread_id="t").committed


@pytest.mark.parametrize("wrong", ["gpt-4o-mini", object(), {"model": "x"}, 42])
def test_anything_else_is_refused_at_construction(tmp_path, wrong):
    with pytest.raises(
        TypeError, match=r"expected a LangChain chat model .* or a memfold ChatModel"
    ):
        _memory(tmp_path, chat_model=wrong)


# --- S6: include_shared ----------------------------------------------------------------------


def test_an_agents_context_layers_the_users_shared_memory_beneath(tmp_path):
    with _memory(tmp_path) as mem:
        mem.add_fact("Name is Alice", user_id="alice")
        mem.add_fact("Never use emojis", category="preference", user_id="alice")
        mem.add_fact("Uses Python 3.12", category="knowledge", user_id="alice", agent="coder")
        block = mem.context(user_id="alice", agent="coder")
        assert "Name is Alice" in block
        assert "Uses Python 3.12" in block
        assert "Uses Python 3.12" not in mem.context(user_id="alice")  # shared stays shared
        strict = mem.context(user_id="alice", agent="coder", include_shared=False)
        assert "Name is Alice" not in strict


def test_an_agent_fact_wins_over_the_same_shared_fact_and_one_budget_holds(tmp_path):
    with _memory(tmp_path) as mem:
        mem.add_fact("Prefers tabs", confidence=0.6, user_id="a")
        mem.add_fact("prefers tabs.", confidence=0.95, user_id="a", agent="x")
        block = mem.context(user_id="a", agent="x")
        assert block.count("refers tabs") == 1
        assert "[context | 0.95] prefers tabs." in block
        for n in range(80):
            mem.add_fact(f"Shared fact number {n} about something", user_id="a")
        from memfold.tokens import get_counter

        small = mem.context(user_id="a", agent="x", max_tokens=200)
        assert get_counter().count(small) <= 200


def test_a_change_to_the_shared_memory_shows_in_the_agents_next_block(tmp_path):
    with _memory(tmp_path) as mem:
        mem.add_fact("Uses vim", user_id="a", agent="x")
        before = mem.context(user_id="a", agent="x")
        mem.add_fact("Lives in Rome", user_id="a")
        after = mem.context(user_id="a", agent="x")
        assert "Lives in Rome" not in before
        assert "Lives in Rome" in after


def test_include_shared_false_in_the_config_keeps_agents_apart(tmp_path):
    config = MemoryConfig(home=tmp_path / "home", include_shared=False)
    with Memory(config) as mem:
        mem.add_fact("Name is Alice", user_id="alice")
        mem.add_fact("Uses Go", user_id="alice", agent="coder")
        assert "Name is Alice" not in mem.context(user_id="alice", agent="coder")
        assert "Name is Alice" in mem.context(user_id="alice", agent="coder", include_shared=True)


# --- S2: reprocess ---------------------------------------------------------------------------


def test_update_reprocess_rebuilds_memory_after_clear(tmp_path):
    with _memory(tmp_path) as mem:
        assert mem.update(DIALOGUE, thread_id="t", user_id="u").facts_added == 2
        mem.clear(user_id="u")
        assert mem.update(DIALOGUE, thread_id="t", user_id="u").skipped == "nothing new"
        again = mem.update(DIALOGUE, thread_id="t", user_id="u", reprocess=True)
        assert again.facts_added == 2
        assert mem.update(DIALOGUE, thread_id="t", user_id="u", reprocess=True).facts_added == 0


def test_a_lone_user_message_is_skipped_and_says_why(tmp_path):
    with _memory(tmp_path) as mem:
        result = mem.update([("user", "I am a chef in Lyon")], thread_id="t")
        assert (result.committed, result.skipped) == (False, "no dialogue")


# --- S3: import_document ----------------------------------------------------------------------


def test_import_refuses_a_document_it_does_not_know_and_keeps_memory(tmp_path):
    with _memory(tmp_path) as mem:
        mem.add_fact("Owns a cat", user_id="d")
        with pytest.raises(ValueError, match="not a memory document memfold knows"):
            mem.import_document({"results": [{"memory": "likes tea"}]}, user_id="d")
        assert [f.content for f in mem.get(user_id="d").facts] == ["Owns a cat"]


def test_import_merge_adds_and_lenient_repairs(tmp_path, caplog):
    data = {"facts": [{"id": "a", "content": "Knows Go", "confidence": 7},
                      {"id": "b", "content": None}]}  # fmt: skip
    with _memory(tmp_path) as mem:
        mem.add_fact("Owns a cat", user_id="d")
        with pytest.raises(ValueError, match="lenient"):
            mem.import_document(data, user_id="d", merge=True)
        with caplog.at_level(logging.WARNING, logger="memfold"):
            doc = mem.import_document(data, user_id="d", merge=True, lenient=True)
        assert sorted(f.content for f in doc.facts) == ["Knows Go", "Owns a cat"]
        assert doc.fact("a").confidence == 1.0
        assert doc.revision == mem.get(user_id="d").revision
        assert "clamped to 1.0" in caplog.text
        assert "no text content" in caplog.text


def test_a_replacing_import_fences_and_a_merge_keeps_the_generation(tmp_path):
    with _memory(tmp_path) as mem:
        mem.add_fact("Owns a cat")
        merged = mem.import_document({"facts": [{"id": "x", "content": "Knows Go"}]}, merge=True)
        assert merged.generation == 0
        replaced = mem.import_document({"facts": [{"id": "x", "content": "Knows Go"}]})
        assert replaced.generation == 1
        assert [f.content for f in replaced.facts] == ["Knows Go"]


# --- users() and scopes() ----------------------------------------------------------------------


def test_users_and_scopes_list_what_is_stored(tmp_path):
    with _memory(tmp_path) as mem:
        assert mem.users() == []
        mem.add_fact("a", user_id="zoe")
        mem.add_fact("b", user_id="adam", agent="coder")
        mem.add_fact("c", user_id="adam")
        mem.add_fact("d")
        assert mem.users() == [None, "adam", "zoe"]
        assert mem.scopes() == [Scope(None, None), Scope("adam", None), Scope("adam", "coder"),
                                Scope("zoe", None)]  # fmt: skip
        assert mem.scopes("adam") == [Scope("adam", None), Scope("adam", "coder")]
        assert mem.scopes(None) == [Scope(None, None)]
        assert mem.scopes("nobody") == []
