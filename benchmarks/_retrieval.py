"""Scoring on the labelled retrieval set in ``benchmarks/retrieval`` (see its README).

Two figures per language and split:

- recall@5: of each query's answering facts, the share that ``Memory.search`` returns in
  its first five hits (averaged over queries);
- injected: the share of answering facts whose line is in the block ``Memory.context``
  renders at the budget (2,000 tokens by default), with ``query=`` (relevant mode) and
  without it (per_call: confidence order).

Used by ``bench_search.py`` and by ``tests/search/test_retrieval_set.py`` (dev split only).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.inject import escape
from memfold.testing import InMemoryStore

DATA = Path(__file__).resolve().parent / "retrieval"
LANGUAGES = ("en", "zh")
SPLITS = ("dev", "held_out")


@dataclass(frozen=True)
class Scores:
    language: str
    split: str
    queries: int
    recall_at_5: float
    injected_relevant: float
    injected_per_call: float


def memory_data(language: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{language}_memory.json").read_text("utf-8"))
    return data


def queries(language: str, split: str | None = None) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(
        (DATA / f"{language}_queries.json").read_text("utf-8")
    )
    return [q for q in loaded if split is None or q["split"] == split]


@contextmanager
def loaded_memory(**overrides: Any) -> Iterator[Memory]:
    """A Memory holding each language's 500-fact memory under user ``en`` / ``zh``."""
    memory = Memory(store=InMemoryStore(), start_workers=False, max_facts=1000, **overrides)
    try:
        for language in LANGUAGES:
            memory.import_document(memory_data(language), user_id=language)
        yield memory
    finally:
        memory.close()


def score(
    memory: Memory,
    language: str,
    split: str,
    *,
    budget: int = 2000,
    search: Callable[[str], list[str]] | None = None,
) -> Scores:
    """Figures for one language and split; ``search`` (query → ranked fact ids) replaces
    ``Memory.search`` to compare other rankers (tokenizers) on the same set."""
    facts = {f.id: f for f in memory.get(user_id=language).facts}
    per_call_block = memory.context(user_id=language, max_tokens=budget)
    found = relevant = per_call = 0.0
    chosen = queries(language, split)
    answers_total = 0
    for item in chosen:
        answers = item["answers"]
        if search is None:
            hits = memory.search(item["query"], user_id=language, limit=5)
            top = {hit.fact.id for hit in hits}
        else:
            top = set(search(item["query"])[:5])
        found += len(top & set(answers)) / len(answers)
        block = memory.context(user_id=language, max_tokens=budget, query=item["query"])
        for fact_id in answers:
            relevant += _shown(facts[fact_id].content, block)
            per_call += _shown(facts[fact_id].content, per_call_block)
            answers_total += 1
    return Scores(
        language,
        split,
        len(chosen),
        found / len(chosen),
        relevant / answers_total,
        per_call / answers_total,
    )


def _shown(content: str, block: str) -> bool:
    """Whether the fact's own line is in the block (not only a longer fact containing it)."""
    line = f"] {escape(content)}"
    return f"{line}\n" in block or f"{line} (avoid:" in block
