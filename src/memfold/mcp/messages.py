"""The message shape of the ``record_conversation`` tool: OpenAI chat messages.

Only the shape is declared here (so clients see a schema); what a message means (roles,
parts, hidden and tool messages, uploads) is decided by ``conversation.capture``, as for
every other face.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic_core import PydanticCustomError

__all__ = ["ChatMessage"]


class ChatMessage(BaseModel):
    """One chat message: ``{"role": "user", "content": "..."}`` (content may also be a
    list of parts such as ``{"type": "text", "text": "..."}``). Other OpenAI fields
    (``tool_calls``, ``metadata`` …) are passed on as given."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(description="user or assistant; system and tool messages are skipped.")
    content: str | list[dict[str, Any] | str] | None = Field(
        default=None, description="The text, or a list of content parts."
    )
    id: str | None = Field(default=None, description="The message's id, when it has one.")

    @field_validator("content", mode="wrap")
    @classmethod
    def _one_content_error(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """One readable error instead of one per member of the union."""
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError(
                "message_content",
                "must be a string, a list of parts such as "
                '{"type": "text", "text": "..."}, or null; got {kind}',
                {"kind": type(value).__name__},
            ) from None

    def as_dict(self) -> dict[str, Any]:
        """The message as the dict ``Memory.record`` takes."""
        return self.model_dump(exclude_none=True)
