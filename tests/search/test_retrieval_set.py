"""Quality floors on the dev split of the labelled retrieval set (``benchmarks/retrieval``).

The held-out split is scored only by ``benchmarks/bench_search.py --quality``; these floors
sit a little under the dev figures so that a change that makes retrieval worse fails here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _retrieval

from memfold import Memory


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with _retrieval.loaded_memory() as loaded:
        yield loaded


@pytest.mark.parametrize(
    ("language", "recall_floor", "injected_floor"),
    [("en", 0.62, 0.70), ("zh", 0.78, 0.88)],
)
def test_dev_split_recall_and_relevant_injection_stay_above_their_floors(
    memory: Memory, language: str, recall_floor: float, injected_floor: float
) -> None:
    scores = _retrieval.score(memory, language, "dev")

    assert scores.queries >= 60
    assert scores.recall_at_5 >= recall_floor
    assert scores.injected_relevant >= injected_floor
    # per_call knows nothing of the message: relevance must beat it by far
    assert scores.injected_relevant >= scores.injected_per_call + 0.4


def test_every_query_names_answers_that_exist_in_its_memory() -> None:
    for language in _retrieval.LANGUAGES:
        ids = {fact["id"] for fact in _retrieval.memory_data(language)["facts"]}
        assert len(ids) == 500
        for item in _retrieval.queries(language):
            assert item["answers"]
            assert set(item["answers"]) <= ids
            assert item["split"] in _retrieval.SPLITS
