"""API keys of ``memfold serve``: make them, hash them, read them from text.

No web framework here, so the ``memfold api-key`` command works without the server extra.
A key is given in clear only to the client and in ``$MEMFOLD_API_KEYS`` or the key file;
the config holds its SHA-256, and the server keeps only hashes once it has read them.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from memfold.errors import ConfigError

__all__ = ["DEFAULT_USER_PATH", "MIN_KEY_CHARS", "Principal", "hash_key", "new_key", "parse_keys"]

#: Keys shorter than this are refused: a key must be a long random string.
MIN_KEY_CHARS = 20
#: ``{user_id}`` of the default user in URLs; no key can be bound to it.
DEFAULT_USER_PATH = "~"


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: ``admin`` reaches every user; otherwise only ``user_id``.

    ``via`` says how it was established (``key:<name>``, ``header``, ``open``), for logs.
    """

    admin: bool
    user_id: str | None = None
    via: str = "open"

    def may_access(self, user_id: str | None) -> bool:
        """True when this caller may read and change ``user_id``'s memory."""
        return self.admin or (self.user_id is not None and user_id == self.user_id)


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key, as ``server.api_keys`` stores it."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A new random API key (256 bits)."""
    return "mf_" + secrets.token_urlsafe(32)


def parse_keys(text: str, where: str) -> dict[str, Principal]:
    """Keys in clear, one per line or comma: ``admin:KEY`` or ``user:USER_ID:KEY``.

    Blank lines and lines starting with ``#`` are skipped. Returns hash → principal.

    Raises:
        ConfigError: a malformed entry or a short key; the message names the entry by its
            position and never repeats the key.
    """
    found: dict[str, Principal] = {}
    entries = [part.strip() for line in text.splitlines() for part in line.split(",")]
    for number, entry in enumerate((e for e in entries if e and not e.startswith("#")), 1):
        kind, _, rest = entry.partition(":")
        user_id, _, key = rest.rpartition(":")
        if kind == "admin" and ":" not in rest:
            user_id, key = "", rest
        elif kind != "user" or not user_id or user_id == DEFAULT_USER_PATH:
            raise ConfigError(
                f"{where}: entry {number} is neither admin:KEY nor user:USER_ID:KEY "
                f"(USER_ID may not be {DEFAULT_USER_PATH!r}, the default user's path)",
                key="server.api_keys",
            )
        if len(key) < MIN_KEY_CHARS:
            raise ConfigError(
                f"{where}: entry {number} has a key shorter than {MIN_KEY_CHARS} characters; "
                "use `memfold api-key` to make a long random one",
                key="server.api_keys",
            )
        name = f"{where}#{number}"
        found[hash_key(key)] = (
            Principal(admin=True, via=f"key:{name}")
            if kind == "admin"
            else Principal(admin=False, user_id=user_id, via=f"key:{name}")
        )
    return found
