"""Public test fakes: use them in your own tests of code that uses memfold.

Every fake keeps its state on the instance, never on the class.

- :class:`ScriptedChatModel`: a ``ChatModel`` that replies with scripted texts or errors
  and records the messages of every call.
- :class:`FakeClock`: a monotonic clock you advance by hand (``Memory(clock=...)``).
- :class:`InMemoryStore`: a ``MemoryStore`` with the same compare-and-set semantics as
  the real stores.
- :class:`FakeOpenAIServer`: a real HTTP server on 127.0.0.1 speaking the OpenAI
  chat-completions protocol with scripted replies, and the embeddings protocol
  (``hashed_embedding`` by default), for end-to-end tests of the real client code path.
  ``handler=`` answers chat requests by their content (e.g. the agent's calls apart from
  memfold's, see :func:`is_extraction_request`), and
  :func:`reject_json_schema_like_llama_cpp` answers like llama-cpp-python's server.
- :func:`extraction_reply`: the JSON text of an extraction reply that adds these facts,
  to script a ``ScriptedChatModel`` or a ``FakeOpenAIServer`` with.
"""

from __future__ import annotations

import json

from memfold.llm.fake_server import (
    FakeOpenAIServer,
    FakeReply,
    hashed_embedding,
    is_extraction_request,
    reject_json_schema_like_llama_cpp,
)
from memfold.llm.scripted import ScriptedChatModel
from memfold.queue.clock import FakeClock
from memfold.store.inmemory import InMemoryStore

__all__ = [
    "FakeClock",
    "FakeOpenAIServer",
    "FakeReply",
    "InMemoryStore",
    "ScriptedChatModel",
    "extraction_reply",
    "hashed_embedding",
    "is_extraction_request",
    "reject_json_schema_like_llama_cpp",
]


def extraction_reply(*facts: str, category: str = "context", confidence: float = 0.9) -> str:
    """An extraction reply (JSON text) adding ``facts`` as user-scoped, durable facts of
    ``category`` and removing nothing; with no facts, the reply of "nothing to keep"."""
    items = [
        {
            "content": content,
            "category": category,
            "confidence": confidence,
            "scope": "user",
            "durability": "durable",
            "sourceError": None,
        }
        for content in facts
    ]
    return json.dumps({"newFacts": items, "factsToRemove": []})
