"""Turn user and agent ids into safe, distinct directory names.

A name is a readable prefix (the id lower-cased, every character outside ``[a-z0-9_-]``
replaced by ``_``, cut to 40 characters) plus ``-`` and 24 hex digits of the SHA-256 of
the exact id. The hash makes the mapping injective in practice (96 bits: ``Alice`` and
``alice``, ``a/b`` and ``a_b`` differ), the character set keeps every name inside its
parent folder and distinct on case-insensitive file systems, and the length stays
bounded (at most 65 bytes) however long the id. Names cannot be decoded: stores keep
the original ids next to the data.

Ids must be non-empty strings of valid Unicode without NUL (NUL is rejected rather than
encoded so that every backend, PostgreSQL ``text`` included, accepts the same ids).
"""

from __future__ import annotations

import hashlib

from memfold.model import validate_id as _validate_id

__all__ = ["DEFAULT_USER_DIR", "HASH_HEX_CHARS", "PREFIX_CHARS", "encode_id", "validate_id"]

#: Directory of the default user (``user_id=None``). ``encode_id`` never produces it: its
#: names always end in ``-`` plus hex digits, and this one has no ``-``.
DEFAULT_USER_DIR = "_default"
PREFIX_CHARS = 40
HASH_HEX_CHARS = 24

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def validate_id(value: object, what: str) -> str:
    """:func:`memfold.model.validate_id` without the length limit: a store must read back
    every id it ever stored. Returns ``value`` unchanged.

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: it is empty, contains NUL, or is not valid Unicode (lone surrogates).
    """
    return _validate_id(value, what, max_chars=None, optional=True)


def encode_id(value: str, what: str = "id") -> str:
    """The directory name for ``value``: safe, bounded, distinct for distinct ids.

    Raises:
        TypeError, ValueError: as :func:`validate_id`.
    """
    validate_id(value, what)
    prefix = "".join(c if c in _SAFE else "_" for c in value[:PREFIX_CHARS].lower()[:PREFIX_CHARS])
    if prefix.startswith("-"):  # a leading dash reads as an option to shell tools
        prefix = "_" + prefix[1:]
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:HASH_HEX_CHARS]
    return f"{prefix}-{digest}"
