"""A LangChain agent that remembers its user across threads, with one line of memfold.

Offline (default): a scripted fake chat model and memfold's rule extractor; no network.

    python examples/langchain_agent.py

Against a real OpenAI-compatible endpoint, when ``OPENAI_API_KEY`` is set (and optionally
``OPENAI_BASE_URL`` and ``OPENAI_MODEL``, default ``gpt-4o-mini``): the agent's model comes
from ``langchain.chat_models.init_chat_model``, which needs ``pip install langchain-openai``,
and memfold extracts memory through the same endpoint with its own ``openai`` adapter
(``pip install 'memfold[openai,langchain]'``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from memfold import Memory
from memfold.integrations.langchain import MemoryMiddleware

SYSTEM_PROMPT = "You are a helpful assistant."


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class OfflineModel(BaseChatModel):
    """A stand-in for a real chat model: calls ``multiply`` when asked for a product,
    otherwise answers from what its system prompt says about the user."""

    last_system_prompt: str = ""

    @property
    def _llm_type(self) -> str:
        return "offline-example"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        system = messages[0].text if messages and messages[0].type == "system" else ""
        self.last_system_prompt = system
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"The answer is {last.text}.")
        elif " * " in last.text:
            a, b = (int(part) for part in last.text.rstrip("?").split()[-3::2])
            call = {"name": "multiply", "args": {"a": a, "b": b}, "id": "call_1"}
            reply = AIMessage(content="", tool_calls=[call])
        elif "Berlin" in system:
            reply = AIMessage(content="Welcome back, Alice! How about a bike tour along the Spree?")
        else:
            reply = AIMessage(content="Nice to meet you! I will keep answers short.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_model_and_memory(home: Path) -> tuple[BaseChatModel, Memory, bool]:
    """The agent's chat model and a Memory; real ones when OPENAI_API_KEY is set."""
    if not os.environ.get("OPENAI_API_KEY"):
        return OfflineModel(), Memory(home=home), False
    from langchain.chat_models import init_chat_model

    model_name = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    base_url = os.environ.get("OPENAI_BASE_URL")
    try:
        model = init_chat_model(model_name, model_provider="openai", base_url=base_url)
    except ImportError:
        sys.exit(
            "OPENAI_API_KEY is set, so this example talks to a real endpoint, which needs "
            "LangChain's OpenAI models: pip install langchain-openai (or unset OPENAI_API_KEY "
            "to run offline)"
        )
    llm = {"provider": "openai", "model": model_name, "base_url": base_url}
    return model, Memory(home=home, llm=llm), True


def say(agent: Any, thread: str, text: str) -> str:
    result = agent.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": "alice"},
    )
    answer: str = result["messages"][-1].text
    print(f"[{thread}] user: {text}\n[{thread}] assistant: {answer}")
    return answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="memfold home (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memfold-example-") as scratch:
        model, memory, real = build_model_and_memory(args.home or Path(scratch))
        with memory:
            agent = create_agent(
                model,
                tools=[multiply],
                system_prompt=SYSTEM_PROMPT,
                middleware=[MemoryMiddleware(memory)],  # the one line memfold needs
                checkpointer=InMemorySaver(),
            )
            say(agent, "t1", "Hi! I'm Alice, a data engineer in Berlin. I prefer concise answers.")
            say(agent, "t1", "What is 17 * 23?")  # a tool call: never reaches memory

            # Updates run in the background debounce_seconds after a thread goes quiet;
            # a script that ends now flushes them (leaving `with memory:` would too).
            memory.flush()
            print("\nmemory of alice after thread t1:")
            print(memory.context(user_id="alice") or "(empty)")

            print()
            say(agent, "t2", "Any idea for the weekend?")  # a new thread: memory is injected
            if not real:
                print("\nsystem prompt the model saw in thread t2:")
                print(model.last_system_prompt)  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
