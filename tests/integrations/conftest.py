"""Fakes for the LangChain integration tests: a chat model that records what it receives,
a spy extractor, and a Memory wired to them that only updates when a test says so."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from memfold import Memory
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact
from memfold.testing import FakeClock, InMemoryStore

REMEMBER = "remember "

Reply = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class RecordingChatModel(BaseChatModel):
    """Replies from a script (then echoes the last human message) and records every call's
    messages; ``bind_tools`` returns the model itself so the agent's tool loop runs."""

    replies: list[Any] = Field(default_factory=list)  # Reply; Any keeps pydantic off them
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        if self.replies:
            reply = self.replies.pop(0)
            message = reply(list(messages)) if callable(reply) else reply
        else:
            last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
            message = AIMessage(content=f"Noted: {last.text if last else ''}")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingChatModel:  # type: ignore[override]
        return self

    def system_texts(self) -> list[str]:
        """The system message text of each call ("" when the call had none)."""
        texts = []
        for call in self.calls:
            first = call[0] if call else None
            texts.append(first.text if first is not None and first.type == "system" else "")
        return texts


class SpyExtractor:
    """Records every ExtractionRequest; a user message ``remember X`` becomes fact X."""

    name = "spy"

    def __init__(self) -> None:
        self.requests: list[ExtractionRequest] = []

    def propose(self, request: ExtractionRequest) -> Extraction:
        self.requests.append(request)
        facts = tuple(
            NewFact(content=m.content[len(REMEMBER) :], category="context", confidence=0.9)
            for m in request.messages
            if m.role == "user" and m.content.startswith(REMEMBER)
        )
        return Extraction(ChangeSet(new_facts=facts))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def spy() -> SpyExtractor:
    return SpyExtractor()


@pytest.fixture
def make_memory(clock: FakeClock, spy: SpyExtractor) -> Iterator[Callable[..., Memory]]:
    """Build a Memory without worker threads (updates run on flush/run_due only)."""
    made: list[Memory] = []

    def make(store: InMemoryStore | None = None, **overrides: Any) -> Memory:
        memory = Memory(
            store=store if store is not None else InMemoryStore(),
            extractor=spy,
            clock=clock,
            start_workers=False,
            **overrides,
        )
        made.append(memory)
        return memory

    yield make
    for memory in made:
        memory.close(timeout=5)


@pytest.fixture
def memory(make_memory: Callable[..., Memory]) -> Memory:
    return make_memory()


@pytest.fixture
def make_model() -> Callable[..., RecordingChatModel]:
    def make(*replies: Reply) -> RecordingChatModel:
        return RecordingChatModel(replies=list(replies))

    return make
