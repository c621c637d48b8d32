"""The rule extractor on the shipped corpora stays where it was measured (a regression
guard; the figures themselves come from ``memfold eval extraction``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold.eval import evaluate, load_corpus

CORPORA = Path(__file__).resolve().parents[2] / "corpora" / "extraction"

FLOORS = [
    # corpus, recall, precision (invented facts: always 0)
    ("realistic-tune", 0.95, 0.95),
    ("realistic-heldout", 0.75, 0.95),
    ("known-phrasings", 0.95, 0.95),
]


@pytest.mark.parametrize(("name", "recall", "precision"), FLOORS)
def test_rules_keep_their_measured_quality_and_invent_nothing(
    name: str, recall: float, precision: float
) -> None:
    report = evaluate(load_corpus(CORPORA / f"{name}.jsonl")).report
    assert report.overall.invented == 0, report.facts_with("invented")
    assert (report.overall.recall or 0) >= recall
    assert (report.overall.precision or 0) >= precision
    for language, figures in report.by_language.items():
        assert (figures.recall or 0) >= 0.5, language
