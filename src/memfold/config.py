"""``MemoryConfig``: one validated model, from arguments, a YAML file and ``MEMFOLD_*`` env.

Precedence, lowest first: defaults, the YAML file (an explicit path, ``$MEMFOLD_CONFIG``
or ``./memfold.yaml``), environment variables, explicit arguments. Validation errors name
the key and its allowed range, and suggest the key a misspelt one probably meant.

Why not pydantic-settings: it adds ~200 ms to every import of memfold (measured on the
development machine) and its errors would still need this module's rewording.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from memfold._config_sources import (
    ENV_PREFIX,
    closest,
    find_config_file,
    from_env,
    merge_sources,
    read_yaml,
)
from memfold.errors import ConfigError
from memfold.model import DEFAULT_CATEGORIES

__all__ = [
    "ENV_PREFIX",
    "ApiKeyEntry",
    "EmbeddingsConfig",
    "LLMConfig",
    "McpConfig",
    "MemoryConfig",
    "ServerConfig",
    "mask_secrets",
    "mask_url",
]

#: ``guaranteed_token_budget`` when it is not set: this share of ``max_injection_tokens``,
#: at most ``_GUARANTEED_BUDGET_CAP``.
_GUARANTEED_SHARE = 0.25
_GUARANTEED_BUDGET_CAP = 500


def _masked_repr_args(model: Any, args: Any) -> Any:
    """security: ``repr``/``str`` of a model with a ``base_url`` show it with its
    credentials masked (the field itself is ``repr=False``)."""
    yield from args
    yield "base_url", mask_url(model.base_url)


class LLMConfig(BaseModel):
    """The chat model used by ``extractor: llm``. The API key is never stored here: only
    the *name* of the environment variable that holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["openai", "langchain"] = "openai"
    model: str = Field(min_length=1)
    base_url: str | None = Field(default=None, repr=False)  # security: masked in __repr_args__
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    #: One HTTP request (openai); one model call (langchain). ``extraction_timeout_seconds``
    #: bounds a whole extraction, retries included.
    timeout_seconds: float = Field(default=60.0, gt=0.0, le=3600.0)
    max_retries: int = Field(default=2, ge=0, le=10)
    #: ``auto`` negotiates per server: json_schema, json_object_schema (llama.cpp's grammar
    #: form), json_object, text (schema in the prompt); any other value pins that mode.
    response_format: Literal["auto", "json_schema", "json_object_schema", "json_object", "text"] = (
        "auto"
    )
    #: Sent as ``max_tokens`` with every request, so a small model cannot run on.
    max_output_tokens: int = Field(default=1500, ge=16, le=200_000)
    #: Older spelling of response_format: ``on`` = json_schema, ``off`` = text.
    json_mode: Literal["auto", "on", "off"] | None = None

    def model_post_init(self, __context: Any) -> None:
        pinned = {"auto": "auto", "on": "json_schema", "off": "text"}
        if self.json_mode is not None and self.response_format not in (
            "auto",
            pinned[self.json_mode],
        ):
            raise ConfigError(
                f"llm.json_mode={self.json_mode} contradicts llm.response_format="
                f"{self.response_format}: set only response_format",
                key="llm.json_mode",
            )

    def __repr_args__(self) -> Any:
        return _masked_repr_args(self, super().__repr_args__())


class EmbeddingsConfig(BaseModel):
    """Optional embeddings for hybrid search, from an OpenAI-compatible ``/v1/embeddings``
    endpoint. The API key is never stored here: only the *name* of its variable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["openai"] = "openai"
    model: str = Field(min_length=1)
    base_url: str | None = Field(default=None, repr=False)  # security: masked in __repr_args__
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout_seconds: float = Field(default=10.0, gt=0.0, le=600.0)
    #: Ask the model for shorter vectors (OpenAI text-embedding-3 models accept it).
    dimensions: int | None = Field(default=None, ge=1, le=65_536)
    batch_size: int = Field(default=64, ge=1, le=2048)

    def __repr_args__(self) -> Any:
        return _masked_repr_args(self, super().__repr_args__())


class McpConfig(BaseModel):
    """``memfold mcp`` (issue 19): whose memory a stdio session works on when the command
    line does not say (``--user``/``--agent`` win), and whether ``memfold serve`` offers
    the MCP endpoint at ``/mcp``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: str | None = Field(default=None, min_length=1, max_length=1024)
    agent: str | None = Field(default=None, min_length=1, max_length=1024)
    #: ``memfold serve`` mounts the streamable-HTTP transport at ``/mcp`` (needs the ``mcp``
    #: extra: by default it is left out, with a warning, when the SDK is missing).
    http: bool = True


# --- memfold serve (issue 18) -------------------------------------------------------------


_CLEAR_KEY_ERROR = "clear_api_key"


class ApiKeyEntry(BaseModel):
    """One API key of ``memfold serve``, by its SHA-256 (``memfold api-key`` prints both):
    ``admin: true`` reaches every user, ``user_id`` binds the key to that user only."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    user_id: str | None = Field(default=None, min_length=1, max_length=1024)
    admin: bool = False
    #: A label for logs (never the key).
    name: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_clear_key(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and ("key" in data or "api_key" in data):
            # security: a custom type, so the error message never echoes the key
            raise PydanticCustomError(
                _CLEAR_KEY_ERROR,
                "an API key never goes in the config in clear: give its sha256 (printed by "
                "`memfold api-key`), or put the key in $MEMFOLD_API_KEYS or server.api_keys_file",
            )
        return data

    def model_post_init(self, __context: Any) -> None:
        if self.admin == (self.user_id is not None):
            raise ValueError("an API key is either admin: true or bound to one user_id")
        if self.user_id == "~":
            raise ValueError("user_id '~' is the default user's path; bind keys to named users")


class ServerConfig(BaseModel):
    """``memfold serve``: keys, proxy header and request size limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_keys: tuple[ApiKeyEntry, ...] = ()
    #: Variable holding keys in clear, one ``admin:KEY`` or ``user:ID:KEY`` per line or comma.
    api_keys_env: str | None = "MEMFOLD_API_KEYS"
    #: File holding keys in the same format (keep it private: mode 0600).
    api_keys_file: Path | None = None
    #: Header an authenticating proxy sets to the signed-in user (e.g. X-Forwarded-User).
    trusted_user_header: str | None = Field(default=None, pattern=r"^[A-Za-z0-9-]+$")
    #: Addresses whose ``trusted_user_header`` is believed (the proxy's).
    trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=1_073_741_824)
    max_import_bytes: int = Field(default=16_777_216, ge=1024, le=1_073_741_824)


class MemoryConfig(BaseModel):
    """Every memfold setting. Keys match the YAML file and ``MEMFOLD_<KEY>`` variables."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    home: Path = Path("./.memfold")
    storage: str = "json"
    dsn: str | None = Field(default=None, repr=False)  # security: no password in reprs
    queue: str = "memory"
    extractor: Literal["auto", "llm", "rules"] = "auto"
    llm: LLMConfig | None = None

    debounce_seconds: float = Field(default=30.0, ge=0.0, le=3600.0)
    max_wait_seconds: float = Field(default=120.0, ge=0.0, le=86400.0)
    workers: int = Field(default=4, ge=1, le=64)
    shutdown_timeout_seconds: float = Field(default=30.0, ge=0.0, le=3600.0)
    max_pending: int = Field(default=10_000, ge=1, le=10_000_000)
    retry_attempts: int = Field(default=3, ge=1, le=20)
    retry_backoff_seconds: float = Field(default=2.0, ge=0.0, le=600.0)
    extraction_timeout_seconds: float = Field(default=120.0, gt=0.0, le=3600.0)

    max_facts: int = Field(default=100, ge=1, le=10_000)
    fact_confidence_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    categories: tuple[str, ...] = DEFAULT_CATEGORIES

    max_injection_tokens: int = Field(default=2000, ge=50, le=200_000)
    guaranteed_categories: tuple[str, ...] = ("correction",)
    #: Default: 25 % of ``max_injection_tokens``, at most 500.
    guaranteed_token_budget: int = Field(default=_GUARANTEED_BUDGET_CAP, ge=0, le=200_000)
    token_encoding: Literal["cl100k_base", "o200k_base"] = "cl100k_base"  # noqa: S105
    injection_mode: Literal["per_call", "per_thread", "relevant"] = "per_call"
    include_date: bool = False
    #: An agent's block also carries the user's shared memory (``agent=None``) beneath the
    #: agent's own facts; ``false`` keeps every agent bucket strictly apart.
    include_shared: bool = True

    #: Search (issue 17): optional embeddings for hybrid ranking; lexical only without.
    embeddings: EmbeddingsConfig | None = None

    #: Replace secrets (API keys, tokens, passwords, card numbers…) before extraction and storage.
    redact_secrets: bool = True
    redact_emails: bool = False
    redact_phones: bool = False
    #: Extra YAML pattern files for the offline rule extractor.
    rule_pattern_files: tuple[Path, ...] = ()
    #: Tags whose blocks capture strips from user text (``<uploaded_files>…</…>``).
    upload_tags: tuple[str, ...] = ("uploaded_files", "current_uploads")

    #: ``memfold serve`` (issue 18): API keys, trusted proxy header, body limits.
    server: ServerConfig = ServerConfig()

    # --- reliability (issue 10) ---------------------------------------------------------
    #: Largest extraction request (prompt tokens); longer runs of new turns are chunked.
    #: The default fits a 32k-context model with 8k left for the reply.
    max_extraction_input_tokens: int = Field(default=24_000, ge=1_000, le=2_000_000)
    #: Pending turns the in-process and durable queues hold at most (UTF-8 bytes).
    max_pending_bytes: int = Field(default=256 * 1024 * 1024, ge=1024, le=2**40)
    #: Racing commits of one scope are retried for this long before a ConflictError.
    conflict_timeout_seconds: float = Field(default=10.0, ge=0.0, le=600.0)
    #: How long a PostgreSQL store or queue call waits for a connection before failing.
    connect_timeout_seconds: float = Field(default=2.0, gt=0.0, le=300.0)

    # --- change history (issue 13) ---
    #: Change events kept per scope, oldest dropped first; 0 keeps no history.
    max_history_events: int = Field(default=1000, ge=0, le=1_000_000)

    #: ``memfold mcp`` (issue 19): the user and agent of a stdio session; ``memfold serve``
    #: offers ``/mcp`` unless ``http`` is false.
    mcp: McpConfig = McpConfig()

    # --- cost (issue 16) ---
    #: Skip the LLM call when the new turns hold nothing about the user (``off``: always
    #: call); the watermark moves past them either way.
    extraction_gate: bool = True
    #: Above this many facts, the extractor sees only the corrections, the facts related
    #: to the new turns and the most confident rest, within ``view_max_tokens``.
    view_max_facts: int = Field(default=40, ge=1, le=10_000)
    #: Token budget of the facts in that smaller view (exact count, ``token_encoding``).
    view_max_tokens: int = Field(default=1_000, ge=50, le=1_000_000)

    _source: Path | None = PrivateAttr(default=None)

    @field_validator("storage", "queue")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        builtin = {"json", "sqlite", "postgres", "memory"}
        if value in builtin or re.fullmatch(r"[\w.]+:[\w.]+", value):
            return value
        raise ValueError(
            f"{value!r} is not a backend: storage takes json, memory, sqlite or postgres; "
            "queue takes memory, sqlite or postgres; either takes 'package.module:Factory'"
        )

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("rule_pattern_files", mode="after")
    @classmethod
    def _expand_files(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(path.expanduser() for path in value)

    @field_validator("categories", "guaranteed_categories")
    @classmethod
    def _lower_categories(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(c.strip().lower() for c in value if c.strip())

    @field_validator("upload_tags")
    @classmethod
    def _tag_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tag in value:
            if not re.fullmatch(r"[A-Za-z_][\w.-]{0,63}", tag):
                raise ValueError(
                    f"{tag!r} is not a tag name: use letters, digits, '_', '-' or '.', "
                    "without the angle brackets (e.g. uploaded_files)"
                )
        return value

    def model_post_init(self, __context: Any) -> None:
        if "guaranteed_token_budget" not in self.model_fields_set:
            scaled = min(_GUARANTEED_BUDGET_CAP, int(self.max_injection_tokens * _GUARANTEED_SHARE))
            # frozen model: the derived default is set once, here, before anyone sees it
            object.__setattr__(self, "guaranteed_token_budget", scaled)
        explicit = "guaranteed_categories" in self.model_fields_set
        for category in self.guaranteed_categories if explicit else ():
            if category not in self.categories:
                guess = closest(category, self.categories)
                hint = f"did you mean {guess!r}? " if guess else ""
                raise ConfigError(
                    f"guaranteed_categories: {category!r} is not one of the categories "
                    f"({', '.join(self.categories)}); {hint}a category of your own must "
                    "also be listed in categories",
                    key="guaranteed_categories",
                )
        if self.guaranteed_token_budget >= self.max_injection_tokens:
            raise ConfigError(
                f"guaranteed_token_budget={self.guaranteed_token_budget}: must be smaller than "
                f"max_injection_tokens={self.max_injection_tokens}",
                key="guaranteed_token_budget",
            )
        if self.storage == "postgres" and not self.dsn:
            raise ConfigError(
                "storage=postgres needs dsn (e.g. postgresql://user@host/db)", key="dsn"
            )
        if self.queue == "postgres" and not self.dsn:
            raise ConfigError(
                "queue=postgres needs dsn (e.g. postgresql://user@host/db)", key="dsn"
            )
        if self.extractor == "llm" and self.llm is None:
            raise ConfigError(
                "extractor=llm needs an llm section: {provider, model, base_url, api_key_env}",
                key="llm",
            )

    # --- construction -----------------------------------------------------------------

    @classmethod
    def build(
        cls,
        file: str | os.PathLike[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> MemoryConfig:
        """Defaults < YAML file < ``MEMFOLD_*`` environment < ``overrides``.

        The file is ``file``, else the one ``$MEMFOLD_CONFIG`` names, else
        ``./memfold.yaml`` when it exists (``source_file`` says which was read).

        Raises:
            ConfigError: naming the key, the bad value and the allowed range.
        """
        environ = os.environ if env is None else env
        path = find_config_file(file, environ)
        data: dict[str, Any] = {} if path is None else read_yaml(path)
        keys = cls.model_fields
        sections = {
            "llm": LLMConfig.model_fields,
            "embeddings": EmbeddingsConfig.model_fields,
            "mcp": McpConfig.model_fields,
            "server": ServerConfig.model_fields,
        }
        data = merge_sources(data, from_env(environ, keys, sections))
        data.update({k: v for k, v in overrides.items() if v is not None})
        config = cls.validated(data)
        config._source = path
        return config

    @property
    def source_file(self) -> Path | None:
        """The YAML file ``build`` read, or None."""
        return self._source

    def replace(self, **changes: Any) -> MemoryConfig:
        """A copy with ``changes`` applied and validated again; settings derived from
        others (``guaranteed_token_budget``) follow unless they were set.

        Raises:
            ConfigError: a changed value is invalid.
        """
        config = self.validated({**self.model_dump(exclude_unset=True), **changes})
        config._source = self._source
        return config

    @classmethod
    def validated(cls, data: Mapping[str, Any]) -> MemoryConfig:
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(_explain(exc), key=_first_key(exc)) from None

    def masked(self) -> dict[str, Any]:
        """The configuration as a dict, with passwords and keys masked for printing."""
        masked: dict[str, Any] = mask_secrets(self.model_dump(mode="json"))
        return masked


def _first_key(exc: ValidationError) -> str | None:
    errors = exc.errors()
    return ".".join(str(p) for p in errors[0]["loc"]) if errors else None


_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _allowed_range(loc: tuple[int | str, ...]) -> str | None:
    """``between 1 and 64`` (or ``greater than 0.0 and at most 3600.0`` for an exclusive
    bound) for a bounded key, else None."""
    model: type[BaseModel] = MemoryConfig
    sections: dict[int | str, type[BaseModel]] = {"llm": LLMConfig, "embeddings": EmbeddingsConfig}
    if len(loc) == 2 and loc[0] in sections:
        model, loc = sections[loc[0]], loc[1:]
    info = model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
    if info is None:
        return None
    low = high = None
    low_open = high_open = False
    for meta in info.metadata:
        if getattr(meta, "ge", None) is not None:
            low, low_open = meta.ge, False
        elif getattr(meta, "gt", None) is not None:
            low, low_open = meta.gt, True
        if getattr(meta, "le", None) is not None:
            high, high_open = meta.le, False
        elif getattr(meta, "lt", None) is not None:
            high, high_open = meta.lt, True
    if low is None or high is None:
        return None
    if not (low_open or high_open):
        return f"between {low} and {high}"
    lower = f"greater than {low}" if low_open else f"at least {low}"
    upper = f"less than {high}" if high_open else f"at most {high}"
    return f"{lower} and {upper}"


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    sections: dict[int | str, type[BaseModel]] = {"llm": LLMConfig, "embeddings": EmbeddingsConfig}
    model = sections.get(loc[0], MemoryConfig) if len(loc) == 2 else MemoryConfig
    guess = closest(str(loc[-1]), model.model_fields) if loc else None
    if guess is None:
        return "; see the configuration table in the README"
    return f"; did you mean {guess!r}?"


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "config"
        value = err.get("input")
        allowed = _allowed_range(err["loc"])
        if err["type"] == _CLEAR_KEY_ERROR:
            parts.append(f"{key}: {err['msg']}")
        elif allowed is not None and err["type"] in _RANGE_ERRORS:
            parts.append(f"{key}={value!r}: must be {allowed}")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{key}: unknown key{_did_you_mean(err['loc'])}")
        elif not err["loc"] and err["type"] == "value_error":
            # a cross-field rule (model_post_init): its own message, without pydantic's wrap
            error = err.get("ctx", {}).get("error")
            parts.append(str(error) if error is not None else err["msg"])
        elif allowed is not None:
            parts.append(f"{key}={value!r}: {err['msg']}; must be a number {allowed}")
        else:
            parts.append(f"{key}={value!r}: {err['msg']}")
    return "; ".join(parts)


# A key names a secret when its last word is one (``dsn`` is masked by the URL rules):
# ``password``, ``auth_token``, ``client_secret``, ``api_key`` — not ``token_encoding``.
_SECRET_KEY = re.compile(
    r"(?:^|[_-])(?:password|passwd|pwd|secret|token|api_?key|access_?key|private_?key)$",
    re.IGNORECASE,
)
# security: every pattern below runs in linear time (bounded repeats, anchored starts).
# A URL: a scheme that starts a word, then everything up to whitespace.
_URL = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}://\S*")
_DSN_PASSWORD = re.compile(
    r"(?P<head>\b(?:ssl)?(?:password|passwd|pwd)[ \t]{0,16}=[ \t]{0,16})"
    r"(?P<pw>'[^']{0,1024}'|\"[^\"]{0,1024}\"|[^\s;&]+)",
    re.I,
)
#: Query and fragment parameters whose value is a credential (compared lower-cased, with
#: ``-`` read as ``_``), and name endings that make one.
_SECRET_PARAMS = frozenset(
    {
        "key", "apikey", "api_key", "x_api_key", "token", "access_token", "refresh_token",
        "id_token", "auth", "authorization", "secret", "client_secret", "password",
        "passwd", "pwd", "sig", "signature", "sas", "code", "session", "sessionid",
        "credential", "x_amz_credential", "x_amz_security_token", "x_goog_signature",
    }
)  # fmt: skip
_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_signature", "_sig")
_MASK = "****"


def _secret_param(name: str) -> bool:
    key = name.strip().lower().replace("-", "_")
    return key in _SECRET_PARAMS or key.endswith(_SECRET_SUFFIXES)


def _mask_params(part: str) -> str:
    """``a=1&api_key=sk-…`` with the values of credential parameters masked; everything
    else kept byte for byte (no re-encoding)."""
    pieces = []
    for piece in part.split("&"):
        name, equals, value = piece.partition("=")
        pieces.append(f"{name}={_MASK}" if equals and value and _secret_param(name) else piece)
    return "&".join(pieces)


def _mask_one_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    cut = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            cut = min(cut, found)
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:  # the password runs to the last "@" (an unencoded "@" is common)
        userinfo, _, host = authority.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if colon and password:
            authority = f"{user}:{_MASK}@{host}"
    if "?" in tail or "#" in tail:
        path, hash_mark, fragment = tail.partition("#")
        path, question, query = path.partition("?")
        tail = path + question + _mask_params(query) + hash_mark + _mask_params(fragment)
    return f"{scheme}://{authority}{tail}"


def mask_url(text: str | None) -> str | None:
    """``text`` with the credentials in every URL it holds masked: the password of the
    user-info (``https://user:****@host``) and the values of query or fragment parameters
    named like keys (``?api_key=****``, ``key``, ``token``, ``access_token``, ``secret``,
    ``sig``, names ending in ``_key``/``_token``…). Linear in the length of ``text``."""
    if not text or "://" not in text:
        return text
    return _URL.sub(lambda m: _mask_one_url(m.group()), text)


def mask_secrets(value: Any, key: str = "") -> Any:
    """Mask passwords and keys in URLs/DSNs and values of secret-looking keys, recursively."""
    if isinstance(value, Mapping):
        return {k: mask_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_secrets(v, key) for v in value]
    if isinstance(value, str):
        if _SECRET_KEY.search(key) and not key.endswith("_env") and value:
            return _MASK
        value = mask_url(value) or value
        return _DSN_PASSWORD.sub(lambda m: m.group("head") + _MASK, value)
    return value
