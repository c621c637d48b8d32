"""Chat models memfold can extract with: the protocol and its adapters.

The adapters import their SDKs lazily, so ``memfold.llm`` imports without the extras.
"""

from memfold.llm.base import ChatMessage, ChatModel, ChatModelError, Completion
from memfold.llm.factory import make_chat_model
from memfold.llm.langchain import LangChainChatModel
from memfold.llm.openai import OpenAIChatModel

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatModelError",
    "Completion",
    "LangChainChatModel",
    "OpenAIChatModel",
    "make_chat_model",
]
