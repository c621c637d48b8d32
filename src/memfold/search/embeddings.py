"""Text embeddings through any OpenAI-compatible ``/v1/embeddings`` endpoint.

Optional: without an ``embeddings`` section in the config, search is lexical only. Nothing
here downloads a model; the endpoint (OpenAI, Ollama, vLLM, llama.cpp, LiteLLM, a TEI
server, ...) does the work. The API key is read from the environment variable named by
``api_key_env``, never from a configuration file.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from memfold._openai_sdk import api_key_from_env, import_openai
from memfold.config import mask_secrets
from memfold.errors import MemfoldError

if TYPE_CHECKING:
    from memfold.config import EmbeddingsConfig

__all__ = [
    "Embedder",
    "EmbeddingError",
    "OpenAIEmbeddings",
    "Vector",
    "make_embedder",
    "unit_vector",
]

#: A unit-length embedding in single precision (a quarter of the memory of a float list).
Vector: TypeAlias = "array[float]"


class EmbeddingError(MemfoldError):
    """The embeddings endpoint failed or answered something that is not embeddings."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors; one vector per text, in order, all of one length."""

    #: Identifies the model, so vectors of two models are never compared.
    name: str

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """Raises:
        EmbeddingError: the texts could not be embedded.
        """
        ...


def unit_vector(values: Sequence[float]) -> Vector:
    """``values`` scaled to length 1, as a compact ``array('f')``.

    Raises:
        EmbeddingError: a value is not a finite number, or the vector is empty or zero.
    """
    try:
        floats = [float(v) for v in values]
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"an embedding holds a value that is not a number: {exc}") from exc
    norm = math.sqrt(math.fsum(v * v for v in floats))
    if not floats or not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingError(
            "the endpoint returned an empty, zero or non-finite embedding; check the model"
        )
    return array("f", [v / norm for v in floats])


class OpenAIEmbeddings:
    """An :class:`Embedder` over ``POST {base_url}/embeddings`` with the ``openai`` SDK.

    Texts are sent in batches of ``batch_size``; each request may take ``timeout`` seconds
    and is not retried (search falls back to lexical ranking and tries again later).

    Raises:
        ConfigError: the ``openai`` package is missing, or the key variable is not set.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 10.0,
        dimensions: int | None = None,
        batch_size: int = 64,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name, e.g. 'text-embedding-3-small'")
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size}: must be at least 1")
        sdk = import_openai("embeddings")
        api_key = api_key_from_env(api_key_env, "embeddings", environ)
        self.model = model
        self.name = f"openai:{model}:{dimensions or ''}"
        self.base_url = base_url
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._client = sdk.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0
        )

    def __repr__(self) -> str:
        base_url = mask_secrets(self.base_url)  # security: no credentials in reprs
        return f"OpenAIEmbeddings(model={self.model!r}, base_url={base_url!r})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """One vector per text, in order.

        Raises:
            EmbeddingError: the endpoint failed, timed out, or answered with the wrong
                number of vectors.
        """
        out: list[Sequence[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._batch(list(texts[start : start + self.batch_size])))
        return out

    def _batch(self, texts: list[str]) -> list[Sequence[float]]:
        sdk = import_openai("embeddings")
        where = f"embeddings model {self.model!r} at {mask_secrets(self.base_url) or 'OpenAI'}"
        kwargs: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            kwargs["dimensions"] = self.dimensions
        try:
            response = self._client.embeddings.create(**kwargs)
        except sdk.APIStatusError as exc:
            raise EmbeddingError(f"{where}: HTTP {exc.status_code}: {exc.message}") from exc
        except sdk.APITimeoutError as exc:
            raise EmbeddingError(
                f"{where}: no reply within the timeout; raise embeddings.timeout_seconds"
            ) from exc
        except sdk.APIConnectionError as exc:
            raise EmbeddingError(
                f"{where}: cannot connect ({exc}); check embeddings.base_url"
            ) from exc
        except (sdk.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise EmbeddingError(f"{where}: {type(exc).__name__}: {exc}") from exc
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            got = len(data) if isinstance(data, list) else "no"
            raise EmbeddingError(f"{where}: sent {len(texts)} texts, got {got} embeddings back")
        ordered = sorted(data, key=lambda item: getattr(item, "index", 0))
        vectors: list[Sequence[float]] = []
        for item in ordered:
            vector = getattr(item, "embedding", None)
            if not isinstance(vector, list):
                raise EmbeddingError(f"{where}: an embedding is not a list of numbers")
            vectors.append(vector)
        return vectors


def make_embedder(config: EmbeddingsConfig) -> Embedder:
    """The embedder an ``embeddings`` config section describes.

    Raises:
        ConfigError: a missing package or API key variable.
    """
    return OpenAIEmbeddings(
        config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        timeout=config.timeout_seconds,
        dimensions=config.dimensions,
        batch_size=config.batch_size,
    )
