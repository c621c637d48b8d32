"""Optional embeddings: the OpenAI-compatible client against a local fake endpoint, hybrid
ranking, the per-fact vector cache and falling back to lexical search when it fails."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence

import pytest

from memfold import ConfigError, Memory, MemoryConfig
from memfold.model import Fact, Scope
from memfold.search import EmbeddingError, OpenAIEmbeddings, Searcher
from memfold.testing import FakeClock, FakeOpenAIServer, FakeReply, InMemoryStore

#: Words of one idea share a dimension: a tiny "semantic" model for the fake endpoint.
CONCEPTS = (
    ("alcohol", "wine", "beer", "drink", "cocktail", "bar"),
    ("dog", "retriever", "puppy", "walk"),
    ("peanut", "nut", "allergic", "allergy"),
    ("japan", "tokyo", "kyoto", "japanese"),
)


def concept_embedding(text: str) -> list[float]:
    lowered = text.lower()
    return [0.05] + [float(any(word in lowered for word in words)) for words in CONCEPTS]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embed=concept_embedding) as fake:
        yield fake


def hybrid_memory(server: FakeOpenAIServer, **overrides: object) -> Memory:
    return Memory(
        store=InMemoryStore(),
        start_workers=False,
        embeddings={"model": "fake-embed", "base_url": server.base_url, "api_key_env": None},
        **overrides,
    )


def seed(memory: Memory) -> dict[str, Fact]:
    texts = {
        "alcohol": "Does not drink alcohol",
        "dog": "Has a golden retriever named Biscuit",
        "trip": "Planning two weeks in Kyoto in October",
        "work": "Works as a backend engineer",
    }
    return {key: memory.add_fact(text, user_id="u") for key, text in texts.items()}


# --- the client ------------------------------------------------------------------------


def test_client_returns_one_vector_per_text_in_batches(server: FakeOpenAIServer) -> None:
    client = OpenAIEmbeddings("m", base_url=server.base_url, api_key_env=None, batch_size=2)

    vectors = client.embed(["wine", "dog", "tokyo", "plain", "beer"])

    assert [list(v) for v in vectors] == [
        concept_embedding(t) for t in ("wine", "dog", "tokyo", "plain", "beer")
    ]
    assert [r["input"] for r in server.embedding_requests] == [
        ["wine", "dog"],
        ["tokyo", "plain"],
        ["beer"],
    ]
    assert server.requests == []  # the chat side saw nothing
    client.close()


def test_client_sends_dimensions_when_asked(server: FakeOpenAIServer) -> None:
    client = OpenAIEmbeddings("m", base_url=server.base_url, api_key_env=None, dimensions=5)

    client.embed(["x"])

    assert server.embedding_requests[0]["dimensions"] == 5
    assert server.embedding_requests[0]["model"] == "m"


def test_client_needs_its_key_variable() -> None:
    with pytest.raises(ConfigError, match="MEMFOLD_TEST_KEY is not set") as caught:
        OpenAIEmbeddings("m", api_key_env="MEMFOLD_TEST_KEY", environ={})
    assert caught.value.key == "embeddings.api_key_env"
    assert "sk-" not in repr(OpenAIEmbeddings("m", api_key_env="K", environ={"K": "sk-secret"}))


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (FakeReply.error(500, "boom"), "HTTP 500"),
        (FakeReply.error(401, "bad key"), "HTTP 401"),
        (FakeReply.malformed(), "embeddings model 'm'"),
        (FakeReply(body='{"object": "list", "data": []}'), "got 0 embeddings"),
        (FakeReply(body='{"data": [{"index": 0, "embedding": "x"}]}'), "not a list"),
    ],
)
def test_client_errors_name_the_endpoint_and_the_problem(
    server: FakeOpenAIServer, reply: FakeReply, words: str
) -> None:
    client = OpenAIEmbeddings("m", base_url=server.base_url, api_key_env=None)
    server.script_embeddings(reply)

    with pytest.raises(EmbeddingError, match=words):
        client.embed(["x"])


def test_client_timeout_is_an_embedding_error(server: FakeOpenAIServer) -> None:
    client = OpenAIEmbeddings("m", base_url=server.base_url, api_key_env=None, timeout=0.2)
    server.script_embeddings(FakeReply.hang(5))

    with pytest.raises(EmbeddingError, match="timeout"):
        client.embed(["x"])


def test_client_cannot_connect_is_an_embedding_error() -> None:
    client = OpenAIEmbeddings("m", base_url="http://127.0.0.1:9/v1", api_key_env=None)

    with pytest.raises(EmbeddingError, match="cannot connect"):
        client.embed(["x"])


def test_fake_server_answers_base64_like_the_sdk_default(server: FakeOpenAIServer) -> None:
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)

    response = client.embeddings.create(model="m", input="wine bar")

    assert response.data[0].embedding == pytest.approx(concept_embedding("wine bar"))


# --- hybrid search through Memory ------------------------------------------------------


def test_hybrid_search_finds_a_fact_that_shares_no_word_with_the_query(
    server: FakeOpenAIServer,
) -> None:
    with hybrid_memory(server) as memory:
        facts = seed(memory)

        hits = memory.search("Which wine should I bring to the party?", user_id="u", limit=2)

        assert hits[0].fact.id == facts["alcohol"].id
    with Memory(store=InMemoryStore(), start_workers=False) as lexical:
        seed(lexical)
        assert lexical.search("Which wine should I bring to the party?", user_id="u") == []


def test_lexical_and_semantic_matches_are_fused(server: FakeOpenAIServer) -> None:
    with hybrid_memory(server) as memory:
        facts = seed(memory)

        hits = memory.search("backend work and a trip to Japan", user_id="u", limit=4)

        ids = [hit.fact.id for hit in hits]
        assert set(ids[:2]) == {facts["work"].id, facts["trip"].id}
        assert hits[0].score <= 2 / 61  # an RRF score


def test_relevant_injection_uses_embeddings_too(server: FakeOpenAIServer) -> None:
    with hybrid_memory(server, max_facts=500) as memory:
        for i in range(80):
            memory.add_fact(f"Used tool number {i} at work", confidence=0.95, user_id="u")
        memory.add_fact("Does not drink alcohol", confidence=0.71, user_id="u")

        block = memory.context(user_id="u", max_tokens=300, query="Pick a wine for tonight")

        assert "Does not drink alcohol" in block


def test_fact_vectors_are_cached_and_an_edit_embeds_only_that_fact(
    server: FakeOpenAIServer,
) -> None:
    with hybrid_memory(server) as memory:
        facts = seed(memory)
        memory.search("wine", user_id="u")
        assert [r["input"] for r in server.embedding_requests] == [
            ["wine"],
            [f.content for f in memory.get(user_id="u").facts],
        ]

        memory.search("a puppy", user_id="u")
        memory.search("wine", user_id="u")  # the query vector is cached too
        assert server.embedding_requests[-1]["input"] == ["a puppy"]
        assert len(server.embedding_requests) == 3

        memory.edit_fact(facts["dog"].id, content="Has a beagle named Biscuit", user_id="u")
        memory.search("a puppy", user_id="u")
        assert server.embedding_requests[-1]["input"] == ["Has a beagle named Biscuit"]
        assert len(server.embedding_requests) == 4

        memory.delete_fact(facts["work"].id, user_id="u")
        memory.search("a puppy", user_id="u")
        assert len(server.embedding_requests) == 4  # nothing new to embed


def test_a_cleared_scope_drops_its_vectors(server: FakeOpenAIServer) -> None:
    with hybrid_memory(server) as memory:
        seed(memory)
        memory.search("wine", user_id="u")
        assert memory._searcher.vector_count() == 4

        memory.clear(user_id="u")

        assert memory._searcher.vector_count() == 0
        assert memory.search("wine", user_id="u") == []


def test_a_failing_endpoint_falls_back_to_lexical_and_pauses(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    with hybrid_memory(server, clock=clock) as memory:
        facts = seed(memory)
        server.script_embeddings(FakeReply.error(503, "overloaded"))

        with caplog.at_level(logging.WARNING, logger="memfold.search"):
            hits = memory.search("drink alcohol", user_id="u")

        assert [h.fact.id for h in hits] == [facts["alcohol"].id]
        assert "embeddings unavailable" in caplog.text
        assert "HTTP 503" in caplog.text
        assert memory._searcher.embedding_failures == 1
        sent = len(server.embedding_requests)

        memory.search("wine", user_id="u")  # paused: lexical only, no request
        assert len(server.embedding_requests) == sent

        clock.advance(31)
        hits = memory.search("Which wine?", user_id="u")
        assert hits[0].fact.id == facts["alcohol"].id  # embeddings are back
        assert len(server.embedding_requests) > sent


class ListEmbedder:
    """A third-party embedder given directly to ``Memory(embedder=...)``."""

    name = "list"

    def __init__(self, vectors: Sequence[Sequence[float]] | None = None) -> None:
        self.vectors = vectors
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        self.calls += 1
        if self.vectors is not None:
            return list(self.vectors)
        return [concept_embedding(text) for text in texts]


def test_an_embedder_passed_in_is_used_and_not_closed() -> None:
    embedder = ListEmbedder()
    with Memory(store=InMemoryStore(), start_workers=False, embedder=embedder) as memory:
        seed(memory)
        assert memory.search("beer", user_id="u")[0].fact.content == "Does not drink alcohol"
    assert embedder.calls == 2


@pytest.mark.parametrize(
    "vectors",
    [
        [[float("nan"), 1.0]],  # not finite
        [[0.0, 0.0]],  # zero
        [["x", 1.0]],  # not a number
        [],  # wrong count
    ],
)
def test_bad_vectors_from_an_embedder_fall_back_to_lexical(vectors: list[list[object]]) -> None:
    embedder = ListEmbedder(vectors)  # type: ignore[arg-type]
    searcher = Searcher(embedder)
    fact = Fact(id="f1", content="Does not drink alcohol")

    hits = searcher.search(Scope("u"), [fact], "alcohol")

    assert [h.fact.id for h in hits] == ["f1"]
    assert searcher.embedding_failures == 1


def test_vectors_of_different_lengths_fall_back_to_lexical() -> None:
    class Shifting:
        name = "shifting"

        def __init__(self) -> None:
            self.size = 3

        def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
            self.size += 1
            return [[1.0] * self.size for _ in texts]

    searcher = Searcher(Shifting())
    facts = [Fact(id="f1", content="Likes tea")]

    assert [h.fact.id for h in searcher.search(Scope("u"), facts, "tea")] == ["f1"]
    assert searcher.embedding_failures == 1


def test_an_embedder_that_raises_anything_falls_back_to_lexical() -> None:
    class Broken:
        name = "broken"

        def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
            raise RuntimeError("model not loaded")

    searcher = Searcher(Broken())
    hits = searcher.search(Scope("u"), [Fact(id="f1", content="Likes tea")], "tea")

    assert [h.fact.id for h in hits] == ["f1"]


def test_pure_python_cosine_gives_the_same_ranking_as_numpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memfold.search import searcher as searcher_module

    facts = [Fact(id=f"f{i}", content=text) for i, text in enumerate(["wine", "dog", "kyoto"])]
    fast = Searcher(ListEmbedder()).search(Scope("u"), facts, "puppy walk")
    monkeypatch.setattr(searcher_module, "_numpy", lambda: None)
    slow = Searcher(ListEmbedder()).search(Scope("u"), facts, "puppy walk")

    assert [h.fact.id for h in slow] == [h.fact.id for h in fast]
    assert slow[0].fact.id == "f1"


def test_the_vector_cache_is_bounded_across_scopes() -> None:
    searcher = Searcher(ListEmbedder(), max_vectors=5)
    for user in range(4):
        facts = [Fact(id=f"f{i}", content=f"dog {user} {i}") for i in range(3)]
        searcher.search(Scope(f"user{user}"), facts, "dog")

    assert searcher.vector_count() <= 5
    assert searcher.cache_len() < 4


def test_only_the_wanted_category_is_embedded() -> None:
    embedder = ListEmbedder()
    searcher = Searcher(embedder)
    facts = [
        Fact(id="f1", content="Likes beer", category="preference"),
        Fact(id="f2", content="Walks the dog", category="behavior"),
    ]

    hits = searcher.search(Scope("u"), facts, "cocktail", category="behavior")

    assert [h.fact.id for h in hits] == ["f2"]


# --- configuration ---------------------------------------------------------------------


def test_embeddings_config_from_environment_json() -> None:
    config = MemoryConfig.build(
        env={"MEMFOLD_EMBEDDINGS": '{"model": "nomic-embed-text", "api_key_env": null}'}
    )

    assert config.embeddings is not None
    assert config.embeddings.model == "nomic-embed-text"
    assert config.embeddings.api_key_env is None
    assert config.embeddings.timeout_seconds == 10.0


def test_embeddings_config_errors_name_the_key_and_range() -> None:
    with pytest.raises(ConfigError, match=r"embeddings.timeout_seconds=0: must be greater"):
        MemoryConfig.build(embeddings={"model": "m", "timeout_seconds": 0})
    with pytest.raises(ConfigError, match=r"embeddings\.model"):
        MemoryConfig.build(embeddings={"model": ""})
    with pytest.raises(ConfigError, match=r"embeddings\.provider"):
        MemoryConfig.build(embeddings={"model": "m", "provider": "cohere"})


def test_memory_without_the_key_variable_fails_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        Memory(store=InMemoryStore(), start_workers=False, embeddings={"model": "m"})


def test_a_missing_openai_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)

    with pytest.raises(ConfigError, match=r"pip install 'memfold\[openai\]'") as caught:
        OpenAIEmbeddings("m", api_key_env=None)
    assert caught.value.key == "embeddings.provider"


def test_an_embedder_without_embed_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="embed"):
        Memory(store=InMemoryStore(), start_workers=False, embedder=object())  # type: ignore[arg-type]


def test_the_fake_servers_default_embedding_puts_texts_with_shared_words_close() -> None:
    from memfold.testing import hashed_embedding

    def cosine(a: str, b: str) -> float:
        return sum(x * y for x, y in zip(hashed_embedding(a), hashed_embedding(b), strict=True))

    with FakeOpenAIServer() as fake:
        client = OpenAIEmbeddings("m", base_url=fake.base_url, api_key_env=None)
        (vector,) = client.embed(["green tea please"])
        client.close()

    assert list(vector) == pytest.approx(hashed_embedding("green tea please"))
    assert cosine("likes green tea", "green tea please") > cosine("likes green tea", "a dog")
    assert hashed_embedding("") == pytest.approx([1.0] + [0.0] * 63)


def test_the_fake_server_refuses_input_that_is_not_text() -> None:
    import json as json_module
    import urllib.error
    import urllib.request

    with FakeOpenAIServer() as fake:
        request = urllib.request.Request(
            f"{fake.base_url}/embeddings",
            data=json_module.dumps({"model": "m", "input": [1, 2]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5)

    assert caught.value.code == 400
    assert "list of strings" in caught.value.read().decode()
