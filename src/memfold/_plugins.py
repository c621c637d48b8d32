"""Third-party backends named ``package.module:Factory`` in the configuration."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from memfold.errors import ConfigError

__all__ = ["load_factory"]


def load_factory(spec: str, *, key: str) -> Callable[..., Any]:
    """The callable ``spec`` (``package.module:Attr.path``) names, for config key ``key``.

    Raises:
        ConfigError: the module cannot be imported, lacks the attribute, or it is not
            callable; the message names the setting and the value.
    """
    module_name, _, attr_path = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"{key}={spec!r}: cannot import {exc.name or module_name!r} "
            "(is the package installed?)",
            key=key,
        ) from exc
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise ConfigError(
                f"{key}={spec!r}: {module_name} has no attribute {attr_path!r}", key=key
            ) from exc
    if not callable(target):
        raise ConfigError(f"{key}={spec!r}: {attr_path} is not callable", key=key)
    return target  # type: ignore[no-any-return]
