"""Who is calling: a request's credentials resolved to an admin or to one bound user.

Reusable by every face served over HTTP (the REST API, the web page, the MCP transport):
:meth:`Authenticator.resolve` takes headers and the client address, so a raw ASGI app can
use it as well as a FastAPI route (:func:`request_principal`).

Keys come from ``server.api_keys`` (SHA-256 hashes only), from ``$MEMFOLD_API_KEYS`` and
from ``server.api_keys_file`` (keys in clear, hashed as they are read; the clear key is
not kept). A key is ``admin`` (every user) or bound to one ``user_id``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request

from memfold.config import ServerConfig
from memfold.errors import ConfigError, MemfoldError
from memfold.server.keys import Principal, hash_key, parse_keys

__all__ = [
    "AuthError",
    "Authenticator",
    "Principal",
    "request_principal",
    "scope_principal",
]

logger = logging.getLogger("memfold.server")

_MAX_HEADER_USER_CHARS = 1024


class AuthError(MemfoldError):
    """The request has no valid credentials (401) or may not do this (403)."""

    def __init__(self, message: str, *, status: int = 401, code: str = "unauthorized") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class Authenticator:
    """Resolves credentials to a :class:`Principal` under one ``ServerConfig``.

    Raises (on construction):
        ConfigError: the key file cannot be read or an entry is malformed.
    """

    def __init__(self, config: ServerConfig, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self._header = config.trusted_user_header
        self._proxy_names = frozenset(config.trusted_proxies)
        self._proxies = tuple(_address(a) for a in config.trusted_proxies if _is_address(a))
        keys: dict[str, Principal] = {}
        for entry in config.api_keys:
            label = entry.name or f"api_keys#{config.api_keys.index(entry) + 1}"
            keys[entry.sha256] = Principal(
                admin=entry.admin, user_id=entry.user_id, via=f"key:{label}"
            )
        if config.api_keys_env and env.get(config.api_keys_env, "").strip():
            keys.update(parse_keys(env[config.api_keys_env], f"${config.api_keys_env}"))
        if config.api_keys_file is not None:
            keys.update(parse_keys(_read_key_file(config.api_keys_file), str(config.api_keys_file)))
        self._keys = keys

    @property
    def has_keys(self) -> bool:
        return bool(self._keys)

    @property
    def is_open(self) -> bool:
        """No keys and no proxy header: every caller is admin (loopback only)."""
        return not self._keys and self._header is None

    def resolve(self, headers: Mapping[str, str], client_host: str | None) -> Principal:
        """The caller of a request with these (case-insensitive) ``headers``.

        Raises:
            AuthError: a wrong key, a bad header, or no credentials where they are needed.
        """
        authorization = headers.get("authorization")
        if authorization is not None:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthError("the Authorization header must be 'Bearer <api key>'")
            found = self._keys.get(hash_key(token.strip()))
            if found is None:
                raise AuthError("this API key is not known to the server")
            return found
        if self._header is not None:
            user = headers.get(self._header)
            if user is not None:
                return self._header_principal(user, client_host)
        if self.is_open:
            return Principal(admin=True, via="open")
        hint = (
            f" or the {self._header} header from a trusted proxy"
            if self._header is not None
            else ""
        )
        raise AuthError(f"send 'Authorization: Bearer <api key>'{hint}")

    def _header_principal(self, user: str, client_host: str | None) -> Principal:
        if not self._trusted(client_host):
            raise AuthError(
                f"the {self._header} header is only believed from server.trusted_proxies; "
                f"this request came from {client_host or 'an unknown address'}"
            )
        user = user.strip()
        if not user or len(user) > _MAX_HEADER_USER_CHARS or not user.isprintable():
            raise AuthError(f"the {self._header} header does not hold a usable user id")
        return Principal(admin=False, user_id=user, via="header")

    def _trusted(self, client_host: str | None) -> bool:
        if client_host is None:
            return False
        if client_host in self._proxy_names:  # also a name such as a unix socket's
            return True
        try:
            address = ipaddress.ip_address(client_host)
        except ValueError:
            return False
        return any(address in network for network in self._proxies)


def _is_address(text: str) -> bool:
    return text[:1].isdigit() or ":" in text


def _address(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise ConfigError(
            f"server.trusted_proxies: {text!r} is not an IP address or network (e.g. 10.0.0.0/8)",
            key="server.trusted_proxies",
        ) from exc


def _read_key_file(path: Path) -> str:
    try:
        text = path.expanduser().read_text(encoding="utf-8")
        mode = path.expanduser().stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"server.api_keys_file: cannot read {path}: {exc}", key="server.api_keys_file"
        ) from exc
    if mode & 0o077:
        logger.warning("%s is readable by other users; chmod 600 it (it holds API keys)", path)
    return text


def scope_principal(auth: Authenticator, scope: MutableMapping[str, Any]) -> Principal:
    """The caller of a raw ASGI request (``scope["type"] == "http"``), for sub-apps such as
    an MCP transport that are not FastAPI routes.

    Raises:
        AuthError: no valid credentials.
    """
    client = scope.get("client")
    return auth.resolve(Headers(scope=scope), client[0] if client else None)


def request_principal(request: Request) -> Principal:
    """FastAPI dependency: the caller of ``request`` (see :class:`Authenticator`).

    Raises:
        AuthError: no valid credentials.
    """
    state = request.app.state.memfold
    principal: Principal = state.auth.resolve(
        request.headers, request.client.host if request.client else None
    )
    return principal
