"""Load the rule extractor's pattern files: YAML format, macros, validation, compiling.

The format is described at the top of ``memfold/data/rules/common.yaml``. All files (the
built-in ones, then the user's ``extra_pattern_files``) are read into one draft and
compiled together, so a file can use another file's macros. A bad file raises
``ConfigError`` naming the file, the rule and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from memfold.errors import ConfigError
from memfold.model import USER_SECTIONS

__all__ = [
    "CJK",
    "CORRECTION",
    "CORRECTION_CONFIDENCE",
    "EXPLICIT_CONFIDENCE",
    "PLACEHOLDER",
    "Rule",
    "RuleSet",
    "builtin_rule_set",
    "load_rules",
]

# The C loader when PyYAML was built with libyaml (several times faster), else pure Python.
_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

EXPLICIT_CONFIDENCE = 0.9
CORRECTION_CONFIDENCE = 0.95
CORRECTION = "correction"

_FILE_KEYS = frozenset(
    {
        *("defines", "guards", "hedges", "past_markers", "sarcasm", "task_markers", "trim"),
        *("reject_values", "reject_leading_words", "rules", "answers"),
    }
)
_RULE_KEYS = frozenset(
    {
        *("id", "pattern", "category", "template", "section", "exclusive", "reject"),
        *("confidence", "stance", "conjugate", "fallback", "family", "question"),
    }
)
_STANCES = {"positive": 1, "negative": -1}
# A pattern that opens with one of these words cannot match text without it.
_LEADING_WORD = re.compile(
    r"(?:\\b|\^)(?P<word>I|my|we)(?![?\w])|(?P<zh><<ZH_SELF>>|\^?我)(?![?们])"
)


def _needed_word(pattern: str) -> str | None:
    match = _LEADING_WORD.match(pattern)
    if match is None:
        return None
    return match.group("word").casefold() if match.group("word") else "我"


_MACRO = re.compile(r"<<([A-Za-z_][A-Za-z0-9_]*)>>")
#: A ``{name}`` placeholder in a rule's template.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CATEGORY = re.compile(r"[a-z][a-z0-9_]*")
#: Chinese (CJK ideograph) text.
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled pattern: what it matches and the fact it writes."""

    id: str
    regex: re.Pattern[str]
    category: str
    template: str
    exclusive: str | None
    reject: frozenset[str]
    confidence: float
    cjk: bool  # the pattern needs Chinese text; it reads Chinese clauses
    stance: int = 0  # +1 / -1: "Likes X" and "Dislikes X" supersede each other
    conjugate: bool = False  # the value opens with the user's verb: third person
    fallback: bool = False  # only when no other rule found anything in the unit
    family: bool = False  # also reads clauses about the user's family
    question: bool = False  # also reads questions ("Could you keep answers short?")
    #: a word every match contains ("i", "my", "我"): text without it is not searched
    needs: str | None = None


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Every rule and shared list of the loaded files, ready for scanning."""

    rules: tuple[Rule, ...]
    guard: re.Pattern[str] | None
    hedge: re.Pattern[str] | None
    past_marker: re.Pattern[str] | None
    sarcasm: re.Pattern[str] | None
    task_marker: re.Pattern[str] | None
    trims: tuple[re.Pattern[str], ...]
    reject_values: frozenset[str]
    reject_leading_words: frozenset[str]
    exclusive_forms: Mapping[str, re.Pattern[str]]
    #: (form of a stance rule's facts with a ``value`` group, +1 or -1)
    stance_forms: tuple[tuple[re.Pattern[str], int], ...]
    #: (an assistant's question, the statement a short reply to it makes: "I live in {answer}")
    answers: tuple[tuple[re.Pattern[str], str], ...] = ()


# --- loading ---------------------------------------------------------------------------


@dataclass
class _Draft:
    """Raw material from all files, compiled together so files can share macros."""

    defines: dict[str, str]
    guards: list[str]
    hedges: list[str]
    past_markers: list[str]
    sarcasm: list[str]
    task_markers: list[str]
    trims: list[str]
    reject_values: set[str]
    reject_leading_words: set[str]
    rules: list[tuple[str, int, Mapping[str, Any]]]
    answers: list[tuple[str, str]]


def _fail(path: str, problem: str) -> ConfigError:
    return ConfigError(f"rule file {path}: {problem}", key="extra_pattern_files")


def _str_list(data: Mapping[str, Any], key: str, path: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(
            path,
            f"'{key}' must be a list of strings (quote yes/no/on/off: YAML reads them as booleans)",
        )
    return list(value)


def _read_file(text: str, path: str, draft: _Draft) -> None:
    try:
        data = yaml.load(text, Loader=_YamlLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        raise _fail(path, f"is not valid YAML ({e}); fix the syntax") from e
    if data is None:
        return
    if not isinstance(data, dict):
        raise _fail(path, f"top level must be a mapping with keys {sorted(_FILE_KEYS)}")
    unknown = set(data) - _FILE_KEYS
    if unknown:
        raise _fail(
            path, f"unknown keys {sorted(map(str, unknown))}; allowed: {sorted(_FILE_KEYS)}"
        )
    defines = data.get("defines", {})
    if not isinstance(defines, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in defines.items()
    ):
        raise _fail(path, "'defines' must map macro names to regular expression strings")
    for name in defines:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise _fail(path, f"macro name {name!r} must be letters, digits and underscores")
    draft.defines.update(defines)
    for key, target in (
        ("guards", draft.guards),
        ("hedges", draft.hedges),
        ("past_markers", draft.past_markers),
        ("sarcasm", draft.sarcasm),
        ("task_markers", draft.task_markers),
    ):
        target.extend(f"{path}\0{p}" for p in _str_list(data, key, path))
    draft.trims.extend(f"{path}\0{p}" for p in _str_list(data, "trim", path))
    draft.reject_values.update(v.casefold() for v in _str_list(data, "reject_values", path))
    draft.reject_leading_words.update(
        v.casefold() for v in _str_list(data, "reject_leading_words", path)
    )
    answers = data.get("answers", [])
    if not isinstance(answers, list) or not all(
        isinstance(a, dict)
        and set(a) == {"question", "statement"}
        and all(isinstance(v, str) for v in a.values())
        and "{answer}" in a["statement"]
        for a in answers
    ):
        raise _fail(
            path, "'answers' must be a list of {question: regex, statement: '... {answer}'}"
        )
    draft.answers.extend((f"{path}\0{a['question']}", a["statement"]) for a in answers)
    rules = data.get("rules", [])
    if not isinstance(rules, list):
        raise _fail(path, "'rules' must be a list of mappings")
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise _fail(path, f"rules[{index}] must be a mapping with keys {sorted(_RULE_KEYS)}")
        draft.rules.append((path, index, rule))


def _expand(pattern: str, defines: Mapping[str, str], where: str) -> str:
    for _ in range(10):
        if not _MACRO.search(pattern):
            return pattern

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in defines:
                raise ConfigError(
                    f"{where}: unknown macro <<{name}>>; define it under 'defines'",
                    key="extra_pattern_files",
                )
            return f"(?:{defines[name]})"

        pattern = _MACRO.sub(substitute, pattern)
    raise ConfigError(
        f"{where}: macros nest more than 10 levels deep (a macro refers to itself?)",
        key="extra_pattern_files",
    )


def _compile(tagged: str, defines: Mapping[str, str], what: str) -> re.Pattern[str]:
    path, _, pattern = tagged.partition("\0")
    where = f"rule file {path}: {what} {pattern!r}"
    try:
        return re.compile(_expand(pattern, defines, where), re.IGNORECASE)
    except re.error as e:
        raise ConfigError(
            f"{where} is not a valid regular expression ({e}); fix the pattern",
            key="extra_pattern_files",
        ) from e


def _any_of(tagged: list[str], defines: Mapping[str, str], what: str) -> re.Pattern[str] | None:
    if not tagged:
        return None
    compiled = [_compile(t, defines, what) for t in tagged]
    return re.compile("|".join(f"(?:{c.pattern})" for c in compiled), re.IGNORECASE)


def _template_form(template: str, *, capture: bool = False) -> str:
    """A regex that matches any content the template can produce (with ``capture``,
    the ``{value}`` part in a group of that name)."""
    parts = PLACEHOLDER.split(template)
    # split() alternates literal text and placeholder names.
    return "".join(
        re.escape(p) if i % 2 == 0 else ("(?P<value>.+?)" if capture and p == "value" else ".+?")
        for i, p in enumerate(parts)
    )


def _build_rule(path: str, index: int, raw: Mapping[str, Any], defines: Mapping[str, str]) -> Rule:
    rule_id = raw.get("id", f"{Path(path).stem}[{index}]")
    where = f"rules[{index}] (id {rule_id!r})"
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise _fail(
            path,
            f"{where}: unknown keys {sorted(map(str, unknown))}; allowed: {sorted(_RULE_KEYS)}",
        )
    for key in ("pattern", "category", "template"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _fail(path, f"{where}: '{key}' is required and must be a non-empty string")
    if not isinstance(rule_id, str):
        raise _fail(path, f"{where}: 'id' must be a string")
    regex = _compile(f"{path}\0{raw['pattern']}", defines, f"{where} pattern")
    if "value" not in regex.groupindex:
        raise _fail(path, f"{where}: pattern needs a named group (?P<value>...)")
    category = raw["category"].strip().lower()
    if not _CATEGORY.fullmatch(category):
        raise _fail(path, f"{where}: category {raw['category']!r} must be a lower-case word")
    template: str = raw["template"]
    for name in PLACEHOLDER.findall(template):
        if name not in regex.groupindex:
            raise _fail(
                path, f"{where}: template uses {{{name}}} but the pattern has no such group"
            )
    if "{value}" not in template:
        raise _fail(path, f"{where}: template must contain {{value}}")
    # 'section' (memfold 0.1: merge the fact into a summary) is accepted and ignored
    section = raw.get("section")
    sections = [section] if isinstance(section, str) else section
    if sections is None:
        sections = []
    if not isinstance(sections, list) or any(s not in USER_SECTIONS for s in sections):
        raise _fail(path, f"{where}: 'section' must be one of {list(USER_SECTIONS)} or a list")
    stance = raw.get("stance")
    if stance is not None and stance not in _STANCES:
        raise _fail(path, f"{where}: 'stance' must be 'positive' or 'negative'")
    if stance is not None and PLACEHOLDER.findall(template) != ["value"]:
        raise _fail(path, f"{where}: a rule with a stance needs a template with only {{value}}")
    flags = {}
    for key in ("conjugate", "fallback", "family", "question"):
        flag = raw.get(key, False)
        if not isinstance(flag, bool):
            raise _fail(path, f"{where}: '{key}' must be true or false")
        flags[key] = flag
    exclusive = raw.get("exclusive")
    if exclusive is not None and (not isinstance(exclusive, str) or not exclusive):
        raise _fail(path, f"{where}: 'exclusive' must be a non-empty string (an attribute name)")
    literal = PLACEHOLDER.sub("", template).strip()
    if exclusive and len(literal) < 2 and not CJK.search(literal):
        raise _fail(
            path, f"{where}: an exclusive rule's template needs literal text around {{value}}"
        )
    reject = _str_list(raw, "reject", f"{path}: {where}")
    default = CORRECTION_CONFIDENCE if category == CORRECTION else EXPLICIT_CONFIDENCE
    confidence = raw.get("confidence", default)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise _fail(path, f"{where}: 'confidence' must be a number between 0 and 1")
    if not 0.0 <= float(confidence) <= 1.0:
        raise _fail(path, f"{where}: confidence={confidence}: must be between 0 and 1")
    return Rule(
        id=rule_id,
        regex=regex,
        category=category,
        template=template,
        exclusive=exclusive,
        reject=frozenset(v.casefold() for v in reject),
        confidence=float(confidence),
        cjk=bool(CJK.search(raw["pattern"])),
        stance=_STANCES.get(stance, 0) if stance is not None else 0,
        conjugate=flags["conjugate"],
        fallback=flags["fallback"],
        family=flags["family"],
        question=flags["question"],
        needs=_needed_word(raw["pattern"]),
    )


def _build(draft: _Draft) -> RuleSet:
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    forms: dict[str, list[str]] = {}
    stance_forms: dict[str, int] = {}
    for path, index, raw in draft.rules:
        rule = _build_rule(path, index, raw, draft.defines)
        if rule.id in seen:
            raise _fail(path, f"rule id {rule.id!r} is already used in {seen[rule.id]}")
        seen[rule.id] = path
        rules.append(rule)
        if rule.exclusive:
            forms.setdefault(rule.exclusive, []).append(_template_form(rule.template))
        if rule.stance:
            stance_forms.setdefault(_template_form(rule.template, capture=True), rule.stance)
    return RuleSet(
        rules=tuple(rules),
        guard=_any_of(draft.guards, draft.defines, "guard"),
        hedge=_any_of(draft.hedges, draft.defines, "hedge"),
        past_marker=_any_of(draft.past_markers, draft.defines, "past marker"),
        sarcasm=_any_of(draft.sarcasm, draft.defines, "sarcasm marker"),
        task_marker=_any_of(draft.task_markers, draft.defines, "task marker"),
        trims=tuple(_compile(t, draft.defines, "trim") for t in draft.trims),
        reject_values=frozenset(draft.reject_values),
        reject_leading_words=frozenset(draft.reject_leading_words),
        exclusive_forms={
            key: re.compile("|".join(f"(?:{f})" for f in sorted(set(fs))), re.IGNORECASE)
            for key, fs in forms.items()
        },
        stance_forms=tuple(
            (re.compile(form, re.IGNORECASE), sign) for form, sign in stance_forms.items()
        ),
        answers=tuple(
            (_compile(question, draft.defines, "answer question"), statement)
            for question, statement in draft.answers
        ),
    )


def _empty_draft() -> _Draft:
    return _Draft({}, [], [], [], [], [], [], set(), set(), [], [])


@lru_cache(maxsize=1)
def _builtin_texts() -> tuple[tuple[str, str], ...]:
    folder = resources.files("memfold") / "data" / "rules"
    entries = sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith((".yaml", ".yml"))),
        key=lambda entry: entry.name,
    )
    return tuple((f"memfold/data/rules/{e.name}", e.read_text(encoding="utf-8")) for e in entries)


def load_rules(extra_files: Sequence[str | Path]) -> RuleSet:
    """The built-in pattern files plus ``extra_files``, compiled together.

    Raises:
        ConfigError: a file cannot be read, is not valid YAML, or has a bad rule.
    """
    draft = _empty_draft()
    for name, text in _builtin_texts():
        _read_file(text, name, draft)
    for extra in extra_files:
        path = Path(extra)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise _fail(str(path), f"cannot be read ({e}); check the path") from e
        _read_file(text, str(path), draft)
    return _build(draft)


@lru_cache(maxsize=1)
def builtin_rule_set() -> RuleSet:
    """The built-in pattern files, compiled once per process."""
    return load_rules(())
