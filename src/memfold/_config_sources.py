"""Where ``MemoryConfig.build`` reads settings from: the YAML file and ``MEMFOLD_*`` variables.

Which file: an explicit path, else ``$MEMFOLD_CONFIG``, else ``./memfold.yaml`` when it
exists. Variables use the key names (``MEMFOLD_WORKERS=8``); the ``llm`` and
``embeddings`` sections take nested names (``MEMFOLD_LLM__MODEL=gpt-4o-mini``) or one JSON
object (``MEMFOLD_LLM``).
A variable that looks like a misspelt key is reported, not silently ignored.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml

from memfold.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG_FILE",
    "ENV_PREFIX",
    "closest",
    "find_config_file",
    "from_env",
    "merge_sources",
    "read_yaml",
]

logger = logging.getLogger("memfold.config")

ENV_PREFIX = "MEMFOLD_"
#: Names the config file when no path is given.
CONFIG_ENV = "MEMFOLD_CONFIG"
#: Read from the working directory when no path is given and ``MEMFOLD_CONFIG`` is unset.
DEFAULT_CONFIG_FILE = Path("memfold.yaml")
#: Separates a section from its key in a variable name: ``MEMFOLD_LLM__MODEL``.
NESTED = "__"
#: Keys whose environment value is a list: JSON (``[...]``) or comma-separated.
LIST_KEYS = ("categories", "guaranteed_categories", "rule_pattern_files", "upload_tags")
#: Keys that are a section (a JSON object, or one ``MEMFOLD_<SECTION>__<KEY>`` per key).
SECTION_KEYS = ("llm", "embeddings", "server")
#: ``MEMFOLD_*`` variables that are not settings (read by memfold's scripts and tests).
_NOT_SETTINGS = frozenset(
    {CONFIG_ENV, "MEMFOLD_PYTHON", "MEMFOLD_DEMO_HOME"}
    # memfold serve: keys in clear, the settings it hands its workers, browser-test knobs
    | {"MEMFOLD_API_KEYS", "MEMFOLD_SERVE_SETTINGS", "MEMFOLD_CHROMIUM", "MEMFOLD_SCREENSHOT"}
)


def closest(word: str, choices: Collection[str]) -> str | None:
    """The choice ``word`` most likely misspells, or None when none is close."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return found[0] if found else None


def find_config_file(
    file: str | os.PathLike[str] | None, env: Mapping[str, str], cwd: Path | None = None
) -> Path | None:
    """The config file to read: ``file``, else ``$MEMFOLD_CONFIG``, else ``./memfold.yaml``
    if it exists (None when there is none).

    Raises:
        ConfigError: ``$MEMFOLD_CONFIG`` names a file that does not exist.
    """
    if file is not None:
        return Path(file)
    named = env.get(CONFIG_ENV, "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"{CONFIG_ENV}={named}: no such file; fix the path or unset {CONFIG_ENV}",
                key="config",
            )
        return path
    local = (Path.cwd() if cwd is None else cwd) / DEFAULT_CONFIG_FILE
    return local if local.is_file() else None


def read_yaml(path: Path) -> dict[str, Any]:
    """The mapping in a YAML config file ({} for an empty file).

    Raises:
        ConfigError: the file cannot be read, is not YAML, or holds something else.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"cannot read config file {path}: {reason}") from exc
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {_yaml_problem(exc)}") from exc
    except RecursionError:
        raise ConfigError(f"config file {path} is nested too deeply") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(
            f"config file {path}: expected a mapping of keys, got {type(loaded).__name__}"
        )
    return loaded


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: what is wrong and where (YAML's own message spans several lines)."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(f"{problem}{where}".split())


def _parse_list_or_object(name: str, key: str, raw: str) -> Any:
    if raw.strip().startswith(("{", "[")):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{name}: not valid JSON ({exc.msg})", key=key) from exc
    if key in SECTION_KEYS:
        raise ConfigError(
            f"{name}={raw!r}: expected a JSON object such as "
            f'\'{{"model": "{raw}"}}\'; or set one key per variable, '
            f"e.g. {ENV_PREFIX}{key.upper()}{NESTED}MODEL={raw}",
            key=key,
        )
    return [part.strip() for part in raw.split(",") if part.strip()]


def from_env(
    env: Mapping[str, str], keys: Collection[str], sections: Mapping[str, Collection[str]]
) -> dict[str, Any]:
    """Settings from ``MEMFOLD_<KEY>`` variables (``keys``: the top-level names;
    ``sections``: nested ones, e.g. ``{"llm": LLMConfig fields}``).

    A variable that names no key is ignored; when it is close to one (a typo such as
    ``MEMFOLD_STORGE``) a warning names the key it probably meant.

    Raises:
        ConfigError: a list or ``llm`` value is not valid JSON.
    """
    out: dict[str, Any] = {}
    for name, raw in sorted(env.items()):
        if not name.startswith(ENV_PREFIX) or name in _NOT_SETTINGS:
            continue
        key = name[len(ENV_PREFIX) :].lower()
        section, _, inner = key.partition(NESTED)
        if inner and section in sections:
            if inner in sections[section]:
                nested = out.setdefault(section, {})
                if isinstance(nested, dict):
                    nested[inner] = raw
            else:
                _warn_unknown(name, f"{section}{NESTED}", inner, sections[section])
        elif key in keys:
            value = (
                _parse_list_or_object(name, key, raw) if key in (*LIST_KEYS, *SECTION_KEYS) else raw
            )
            if key in out and isinstance(out[key], dict) and isinstance(value, dict):
                value = {**value, **out[key]}  # MEMFOLD_LLM__X wins over MEMFOLD_LLM's x
            out[key] = value
        else:
            _warn_unknown(name, "", key, keys)
    return out


def _warn_unknown(name: str, prefix: str, key: str, choices: Collection[str]) -> None:
    guess = closest(key, choices)
    if guess is not None:
        logger.warning(
            "%s is not a memfold setting and is ignored; did you mean %s%s%s?",
            name,
            ENV_PREFIX,
            prefix.upper(),
            guess.upper(),
        )


def merge_sources(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``top``; a section (a mapping in both) is merged key by key."""
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = {**below, **value}
        else:
            merged[key] = value
    return merged
