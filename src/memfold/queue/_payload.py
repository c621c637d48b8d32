"""A queued job's payload as JSON, and the hashes that name a key and its scope in SQL.

Pure functions: the durable queues store ``{"messages": [...], "signals": {...},
"urgent": bool, "recordedAt": float}`` per key (``recordedAt`` only when known) and must
read back exactly what was written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memfold.model import Message, Signals
from memfold.queue.base import JobKey

__all__ = ["Payload", "decode_payload", "encode_payload", "key_hash", "scope_hash"]

_ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class Payload:
    """What one queued key holds: the thread's latest messages, signals, urgency, and when
    its oldest record was made (the recorder's clock; ``None`` when unknown)."""

    messages: tuple[Message, ...]
    signals: Signals
    urgent: bool = False
    recorded_at: float | None = None


def _digest(parts: Sequence[str | None]) -> str:
    raw = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:40]


def key_hash(key: JobKey) -> str:
    """A fixed-size primary key for (thread, user, agent); ``None`` differs from ``""``."""
    return _digest(key)


def scope_hash(key: JobKey) -> str:
    """The hash of the key's (user, agent): jobs with equal hashes never run at once."""
    return _digest(key[1:])


def encode_payload(payload: Payload) -> str:
    """The payload as compact JSON text."""
    data: dict[str, Any] = {
        "messages": [
            {"role": m.role, "content": m.content, **({"id": m.id} if m.id is not None else {})}
            for m in payload.messages
        ],
        "signals": {
            "correction": payload.signals.correction,
            "reinforcement": payload.signals.reinforcement,
        },
        "urgent": payload.urgent,
    }
    if payload.recorded_at is not None:
        data["recordedAt"] = payload.recorded_at
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def decode_payload(value: str | bytes | Mapping[str, Any]) -> Payload:
    """Read a payload back (JSON text, or a mapping when the driver already parsed JSONB).

    Raises:
        ValueError: the value is not a payload this module wrote.
    """
    try:
        data = json.loads(value) if isinstance(value, str | bytes) else value
        messages = []
        for item in data["messages"]:
            role = item["role"]
            if role not in _ROLES:
                raise ValueError(f"not a memfold queue payload: unknown role {role!r}")
            ident = item.get("id")
            messages.append(
                Message(role, str(item["content"]), id=None if ident is None else str(ident))
            )
        signals = data.get("signals") or {}
        recorded_at = data.get("recordedAt")
        if recorded_at is not None and (
            isinstance(recorded_at, bool) or not isinstance(recorded_at, int | float)
        ):
            raise ValueError(f"not a memfold queue payload: recordedAt={recorded_at!r}")
        return Payload(
            tuple(messages),
            Signals(
                correction=bool(signals.get("correction", False)),
                reinforcement=bool(signals.get("reinforcement", False)),
            ),
            urgent=bool(data.get("urgent", False)),
            recorded_at=None if recorded_at is None else float(recorded_at),
        )
    except (KeyError, TypeError, AttributeError, IndexError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a memfold queue payload: {exc}") from exc
