"""Search and relevance-aware injection work the same on every store backend."""

from __future__ import annotations

from memfold import Memory
from memfold.store.base import MemoryStore


def test_search_and_relevant_context_on_every_store(store: MemoryStore) -> None:
    memory = Memory(store=store, start_workers=False, max_facts=200)
    for i in range(100):
        memory.add_fact(f"Used tool number {i} at work", confidence=0.95, user_id="alice")
    peanuts = memory.add_fact("Is allergic to peanuts", confidence=0.71, user_id="alice")
    memory.add_fact("对虾过敏", confidence=0.72, user_id="alice")

    assert [h.fact.id for h in memory.search("peanut butter?", user_id="alice")] == [peanuts.id]
    assert memory.search("虾仁炒饭可以吃吗", user_id="alice")[0].fact.content == "对虾过敏"
    block = memory.context(user_id="alice", max_tokens=300, query="peanut butter?")
    assert "Is allergic to peanuts" in block

    memory.edit_fact(peanuts.id, content="Is allergic to cats", user_id="alice")
    assert memory.search("peanut", user_id="alice") == []
