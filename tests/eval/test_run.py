"""evaluate(): any extractor through Memory, what it stores is scored; failures are listed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from memfold import MemoryConfig
from memfold.errors import ExtractionError
from memfold.eval import evaluate, evaluation_to_dict, format_evaluation, parse_corpus
from memfold.extract.base import Extraction, ExtractionRequest
from memfold.extract.rules import RuleExtractor
from memfold.llm.fake_server import FakeOpenAIServer, FakeReply
from memfold.memory import Memory

LINES = [
    {
        "id": "vegan",
        "lang": "en",
        "messages": [
            {"role": "user", "content": "I'm vegan and I live in Leeds. Any quick dinners?"},
            {"role": "assistant", "content": "Chickpea curry."},
        ],
        "expect": [
            {"terms": ["vegan"], "category": "context"},
            {"terms": ["Leeds"], "category": "context"},
        ],
    },
    {
        "id": "pasted",
        "lang": "en",
        "messages": [
            {
                "role": "user",
                "content": "My friend wrote:\nI moved to Kyoto and I'm a potter.\nReply?",
            },
            {"role": "assistant", "content": "Say congratulations."},
        ],
        "expect": [],
        "traps": [{"terms": ["Kyoto"]}, {"terms": ["potter"]}],
    },
    {
        "id": "zh",
        "lang": "zh",
        "messages": [
            {"role": "user", "content": "我是做财务的，老家在湖南。"},
            {"role": "assistant", "content": "好的。"},
        ],
        "expect": [
            {"terms": ["财务"], "category": "context"},
            {"terms": ["湖南"], "category": "context"},
        ],
    },
]


@pytest.fixture
def corpus():
    return parse_corpus([json.dumps(line, ensure_ascii=False) for line in LINES])


def test_rule_extractor_is_scored_on_what_memory_stores(corpus) -> None:
    evaluation = evaluate(corpus)
    report = evaluation.report
    assert evaluation.extractor == "rules"
    assert (report.overall.expected, report.overall.found) == (4, 4)
    assert report.overall.invented == 0
    assert report.overall.precision == 1.0
    assert evaluation.messages == 6
    assert evaluation.seconds_per_1000_messages > 0


def test_a_failing_extractor_is_listed_and_the_other_conversations_still_score(corpus) -> None:
    class Flaky:
        name = "flaky"

        def propose(self, request: ExtractionRequest) -> Extraction:
            if any("财务" in m.content for m in request.messages):
                raise ExtractionError("the reply was not JSON")
            return RuleExtractor().propose(request)

    evaluation = evaluate(
        corpus, memory=lambda cfg: Memory(cfg, extractor=Flaky(), start_workers=False)
    )
    report = evaluation.report
    assert report.failed == (("zh", "ExtractionError: the reply was not JSON"),)
    assert report.by_language["zh"].found == 0
    assert report.by_language["en"].recall == 1.0
    text = format_evaluation(evaluation, corpus="inline")
    assert "failed (1):" in text
    assert "ExtractionError" in text


def test_the_config_chooses_the_extractor_and_storage_stays_in_memory(corpus, tmp_path) -> None:
    config = MemoryConfig(home=tmp_path / "home", storage="sqlite")
    evaluate(corpus, config)
    assert not (tmp_path / "home").exists()  # nothing written


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def _reply(*contents: str) -> FakeReply:
    facts = [
        {
            "content": c,
            "category": "context",
            "confidence": 0.9,
            "scope": "user",
            "durability": "durable",
        }
        for c in contents
    ]
    return FakeReply.text(json.dumps({"newFacts": facts, "factsToRemove": []}))


def test_an_llm_extractor_over_an_openai_compatible_endpoint_is_scored(corpus, server) -> None:
    server.script(
        _reply("Is vegan", "Lives in Leeds"),
        _reply("Moved to Kyoto"),  # the model invents from the pasted message
        _reply("是做财务的"),
    )
    config = MemoryConfig(
        extractor="llm",
        extraction_gate=False,  # the model is scripted to invent from a pasted message
        llm={
            "provider": "openai",
            "model": "fake",
            "base_url": server.base_url,
            "api_key_env": None,
        },
    )
    evaluation = evaluate(corpus, config)
    report = evaluation.report
    assert evaluation.extractor == "llm"
    assert (report.overall.found, report.overall.invented) == (3, 1)
    assert [f.content for _, f in report.facts_with("invented")] == ["Moved to Kyoto"]
    data = evaluation_to_dict(evaluation)
    assert data["overall"]["invented"] == 1
    assert data["conversations"][2]["missed"] == ["湖南"]
    json.dumps(data)  # JSON-ready
