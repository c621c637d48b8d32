"""What every client of the ``openai`` SDK here needs: the import with the install hint,
and the API key read from the environment variable a config section names."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from memfold.errors import ConfigError

__all__ = ["LOCAL_API_KEY", "api_key_from_env", "import_openai"]

#: Sent as the key when ``api_key_env`` is None (local servers ignore it, the SDK needs one).
LOCAL_API_KEY = "memfold-no-key"


def import_openai(section: str) -> Any:
    """The ``openai`` module.

    Raises:
        ConfigError: it is not installed (``section`` names the config key, e.g. ``llm``).
    """
    try:
        import openai
    except ImportError as exc:
        raise ConfigError(
            f"{section}.provider=openai needs the openai package: pip install 'memfold[openai]'",
            key=f"{section}.provider",
        ) from exc
    return openai


def api_key_from_env(
    api_key_env: str | None, section: str, environ: Mapping[str, str] | None = None
) -> str:
    """The key held by the variable ``api_key_env``, or ``LOCAL_API_KEY`` when it is None.

    Raises:
        ConfigError: the variable is not set or empty.
    """
    if api_key_env is None:
        return LOCAL_API_KEY
    key = (os.environ if environ is None else environ).get(api_key_env, "")
    if not key:
        raise ConfigError(
            f"environment variable {api_key_env} is not set: export it with your API key, or "
            f"set {section}.api_key_env to null for a local server that needs none",
            key=f"{section}.api_key_env",
        )
    return key
