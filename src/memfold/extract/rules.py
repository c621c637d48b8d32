"""The offline extractor: explicit self-statements found by patterns, English and Chinese.

``RuleExtractor`` reads only the user's messages (plus, for a correction, the assistant
turn it corrects) and proposes a fact for every explicit statement a pattern recognises:
"I live in Berlin" → ``Lives in Berlin``, "以后都用中文回答" → ``希望以后都用中文回答``. It
is deterministic and cheap, so it is the default when no LLM is configured. Patterns
live in YAML files (``memfold/data/rules/*.yaml``); users add their own with
``RuleExtractor(extra_pattern_files=[...])``. The file format is described at the top
of ``common.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from memfold.errors import ConfigError
from memfold.extract.base import (
    ChangeSet,
    Extraction,
    ExtractionRequest,
    FactRemoval,
    NewFact,
    SummaryUpdate,
    Usage,
)
from memfold.model import USER_SECTIONS, MemoryDocument

__all__ = ["RuleExtractor"]

# The C loader when PyYAML was built with libyaml (several times faster), else pure Python.
_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Longest summary the rule extractor writes; older clauses are dropped first.
MAX_SUMMARY_CHARS = 300
#: Longest captured value kept in a fact; longer captures are not explicit statements.
MAX_VALUE_CHARS = 120
#: ``source_error`` is the first sentence of the corrected assistant turn, cut to this.
MAX_SOURCE_ERROR_CHARS = 200
EXPLICIT_CONFIDENCE = 0.9
CORRECTION_CONFIDENCE = 0.95
CORRECTION = "correction"

_FILE_KEYS = frozenset(
    {"defines", "guards", "task_markers", "trim", "reject_values", "reject_leading_words", "rules"}
)
_RULE_KEYS = frozenset(
    {"id", "pattern", "category", "template", "section", "exclusive", "reject", "confidence"}
)
_MACRO = re.compile(r"<<([A-Za-z_][A-Za-z0-9_]*)>>")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CATEGORY = re.compile(r"[a-z][a-z0-9_]*")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_HAS_WORD = re.compile(r"[^\W_]")

# Text that never carries a statement by the user: uploads, code, quoted replies, quotes.
_UPLOADS = re.compile(r"<uploaded_files>.*?(?:</uploaded_files>|\Z)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_BLOCKQUOTE = re.compile(r"^\s*>.*$", re.MULTILINE)
_QUOTED = re.compile(
    r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|《[^》\n]*》|(?<![\w'])'[^'\n]+'(?![\w'])"
)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|[。！？!?；;]+|\n+")
_MARKUP = re.compile(r"\*\*|__|^#+\s*|^\s*[-*]\s+", re.MULTILINE)
_QUESTION_END = re.compile(r"[?？]")
_SPACES = re.compile(r"\s+")
_CLAUSE_SPLIT = re.compile(r"\s*(?:[;；。\n]|\.(?=\s|$))\s*")
_EDGE_PUNCT = "\"'`*_ \t,.;:!?，。；：！？、…~～()（）[]【】"


@dataclass(frozen=True, slots=True)
class _Rule:
    id: str
    regex: re.Pattern[str]
    category: str
    template: str
    sections: tuple[str, ...]
    exclusive: str | None
    reject: frozenset[str]
    confidence: float
    cjk: bool  # the pattern needs Chinese text; skipped on sentences without any


@dataclass(frozen=True, slots=True)
class _RuleSet:
    rules: tuple[_Rule, ...]
    guard: re.Pattern[str] | None
    task_marker: re.Pattern[str] | None
    trims: tuple[re.Pattern[str], ...]
    reject_values: frozenset[str]
    reject_leading_words: frozenset[str]
    exclusive_forms: Mapping[str, re.Pattern[str]]


@dataclass(frozen=True, slots=True)
class _Hit:
    content: str
    rule: _Rule
    source_error: str | None
    task: bool


# --- loading ---------------------------------------------------------------------------


@dataclass
class _Draft:
    """Raw material from all files, compiled together so files can share macros."""

    defines: dict[str, str]
    guards: list[str]
    task_markers: list[str]
    trims: list[str]
    reject_values: set[str]
    reject_leading_words: set[str]
    rules: list[tuple[str, int, Mapping[str, Any]]]


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
    for key, target in (("guards", draft.guards), ("task_markers", draft.task_markers)):
        target.extend(f"{path}\0{p}" for p in _str_list(data, key, path))
    draft.trims.extend(f"{path}\0{p}" for p in _str_list(data, "trim", path))
    draft.reject_values.update(v.casefold() for v in _str_list(data, "reject_values", path))
    draft.reject_leading_words.update(
        v.casefold() for v in _str_list(data, "reject_leading_words", path)
    )
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


def _template_form(template: str) -> str:
    """A regex that matches any content the template can produce."""
    parts = _PLACEHOLDER.split(template)
    # split() alternates literal text and placeholder names.
    return "".join(re.escape(p) if i % 2 == 0 else ".+?" for i, p in enumerate(parts))


def _build_rule(path: str, index: int, raw: Mapping[str, Any], defines: Mapping[str, str]) -> _Rule:
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
    for name in _PLACEHOLDER.findall(template):
        if name not in regex.groupindex:
            raise _fail(
                path, f"{where}: template uses {{{name}}} but the pattern has no such group"
            )
    if "{value}" not in template:
        raise _fail(path, f"{where}: template must contain {{value}}")
    section = raw.get("section")
    sections = [section] if isinstance(section, str) else section
    if sections is None:
        sections = []
    if not isinstance(sections, list) or any(s not in USER_SECTIONS for s in sections):
        raise _fail(path, f"{where}: 'section' must be one of {list(USER_SECTIONS)} or a list")
    exclusive = raw.get("exclusive")
    if exclusive is not None and (not isinstance(exclusive, str) or not exclusive):
        raise _fail(path, f"{where}: 'exclusive' must be a non-empty string (an attribute name)")
    if exclusive and len(_PLACEHOLDER.sub("", template).strip()) < 2:
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
    return _Rule(
        id=rule_id,
        regex=regex,
        category=category,
        template=template,
        sections=tuple(sections),
        exclusive=exclusive,
        reject=frozenset(v.casefold() for v in reject),
        confidence=float(confidence),
        cjk=bool(_CJK.search(raw["pattern"])),
    )


def _build(draft: _Draft) -> _RuleSet:
    rules: list[_Rule] = []
    seen: dict[str, str] = {}
    forms: dict[str, list[str]] = {}
    for path, index, raw in draft.rules:
        rule = _build_rule(path, index, raw, draft.defines)
        if rule.id in seen:
            raise _fail(path, f"rule id {rule.id!r} is already used in {seen[rule.id]}")
        seen[rule.id] = path
        rules.append(rule)
        if rule.exclusive:
            forms.setdefault(rule.exclusive, []).append(_template_form(rule.template))
    return _RuleSet(
        rules=tuple(rules),
        guard=_any_of(draft.guards, draft.defines, "guard"),
        task_marker=_any_of(draft.task_markers, draft.defines, "task marker"),
        trims=tuple(_compile(t, draft.defines, "trim") for t in draft.trims),
        reject_values=frozenset(draft.reject_values),
        reject_leading_words=frozenset(draft.reject_leading_words),
        exclusive_forms={
            key: re.compile("|".join(f"(?:{f})" for f in sorted(set(fs))), re.IGNORECASE)
            for key, fs in forms.items()
        },
    )


def _empty_draft() -> _Draft:
    return _Draft({}, [], [], [], set(), set(), [])


@lru_cache(maxsize=1)
def _builtin_texts() -> tuple[tuple[str, str], ...]:
    folder = resources.files("memfold") / "data" / "rules"
    entries = sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith((".yaml", ".yml"))),
        key=lambda entry: entry.name,
    )
    return tuple((f"memfold/data/rules/{e.name}", e.read_text(encoding="utf-8")) for e in entries)


def _load(extra_files: Sequence[str | Path]) -> _RuleSet:
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
def _builtin_rule_set() -> _RuleSet:
    return _load(())


# --- text preparation ------------------------------------------------------------------


def _without_code(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'")
    text = _UPLOADS.sub(" ", text)
    text = _FENCE.sub("\n", text)
    text = _INLINE_CODE.sub(" ", text)
    return _BLOCKQUOTE.sub("", text)


def _sentences(text: str) -> Iterator[tuple[str, bool]]:
    """Split into (sentence, is_question); a '.' splits only before a space or the end."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.start()].strip()
        if piece:
            yield piece, bool(_QUESTION_END.search(match.group()))
        start = match.end()
    tail = text[start:].strip()
    if tail:
        yield tail, False


def _first_sentence(text: str) -> str | None:
    """The assistant turn's first informative sentence ("Sure!" is skipped), cut to 200."""
    found: list[str] = []
    for sentence, _ in _sentences(_MARKUP.sub("", _without_code(text))):
        short = _SPACES.sub(" ", sentence).strip()
        if _HAS_WORD.search(short):
            found.append(short)
            if len(short) >= 12 or (_CJK.search(short) and len(short) >= 5):
                break
    if not found:
        return None
    short = found[-1]
    if len(short) > MAX_SOURCE_ERROR_CHARS:
        short = short[: MAX_SOURCE_ERROR_CHARS - 1].rstrip() + "…"
    return short


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


# --- the extractor ---------------------------------------------------------------------


class RuleExtractor:
    """Deterministic, offline extraction of explicit user statements (English, Chinese).

    Raises (at construction):
        ConfigError: a pattern file cannot be read, is not valid YAML, or has a bad rule;
            the message names the file, the rule and the problem.
    """

    name = "rules"

    def __init__(self, extra_pattern_files: Sequence[str | Path] = ()) -> None:
        if isinstance(extra_pattern_files, str | Path):
            raise TypeError("extra_pattern_files must be a sequence of paths, not one path")
        self._rules = _load(extra_pattern_files) if extra_pattern_files else _builtin_rule_set()
        self._correction_rules = tuple(r for r in self._rules.rules if r.category == CORRECTION)
        self._statement_rules = tuple(r for r in self._rules.rules if r.category != CORRECTION)

    def propose(self, request: ExtractionRequest) -> Extraction:
        """Facts and summaries for the explicit statements in the request's user messages."""
        hits: list[_Hit] = []
        corrected: str | None = None
        for message in request.messages:
            if message.role == "assistant":
                corrected = message.content
            elif message.role == "user":
                hits.extend(self._scan(message.content, corrected, request.signals.correction))
        return Extraction(_change_set(request.document, hits, self._rules), Usage())

    # -- scanning --

    def _scan(self, text: str, corrected: str | None, hinted: bool) -> Iterator[_Hit]:
        plain = _without_code(text)
        yield from self._corrections(plain, corrected, hinted)
        unquoted = _QUOTED.sub(" … ", plain)
        for sentence, question in _sentences(unquoted):
            if question or (self._rules.guard and self._rules.guard.search(sentence)):
                continue
            task = bool(self._rules.task_marker and self._rules.task_marker.search(sentence))
            has_cjk = bool(_CJK.search(sentence))
            has_latin = bool(_LATIN.search(sentence))
            for rule in self._statement_rules:
                if (rule.cjk and not has_cjk) or (not rule.cjk and not has_latin):
                    continue
                for match in rule.regex.finditer(sentence):
                    content = self._render(rule, match)
                    if content:
                        yield _Hit(content, rule, None, task)

    def _corrections(self, plain: str, corrected: str | None, hinted: bool) -> Iterator[_Hit]:
        # A correction opens the message; with the capture-time hint, any sentence may.
        starts = [plain.lstrip()]
        if hinted:
            starts.extend(s for s, _ in _sentences(plain))
        for start in starts:
            for rule in self._correction_rules:
                match = rule.regex.match(start)
                if match:
                    content = self._render(rule, match)
                    if content:
                        source_error = _first_sentence(corrected) if corrected else None
                        yield _Hit(content, rule, source_error, False)
                        return

    def _clean(self, value: str) -> str:
        value = _SPACES.sub(" ", value).strip(_EDGE_PUNCT)
        for _ in range(3):
            before = value
            for trim in self._rules.trims:
                value = trim.sub("", value).strip(_EDGE_PUNCT)
            if value == before:
                break
        return value

    def _render(self, rule: _Rule, match: re.Match[str]) -> str | None:
        value = self._clean(match.group("value") or "")
        # Capitalised only because it opened the sentence ("Answer briefly from now on").
        if (
            match.start("value") == 0
            and not rule.template.startswith("{value}")
            and value[:2].isascii()
            and value[:1].isupper()
            and value[1:2].islower()
        ):
            value = value[0].lower() + value[1:]
        if not value or len(value) > MAX_VALUE_CHARS or not _HAS_WORD.search(value):
            return None
        folded = value.casefold()
        if folded in rule.reject or folded in self._rules.reject_values:
            return None
        first_word = folded.split(" ", 1)[0]
        if first_word in self._rules.reject_leading_words:
            return None

        def fill(placeholder: re.Match[str]) -> str:
            name = placeholder.group(1)
            return value if name == "value" else self._clean(match.group(name) or "")

        content = _SPACES.sub(" ", _PLACEHOLDER.sub(fill, rule.template)).strip()
        if content[:1].isascii() and content[:1].islower():
            content = content[0].upper() + content[1:]
        return content


# --- change set ------------------------------------------------------------------------


def _select(hits: Iterable[_Hit]) -> list[_Hit]:
    """Drop repeats; for an exclusive attribute (name, location…) the last statement wins."""
    chosen: list[_Hit] = []
    seen: set[str] = set()
    for hit in hits:
        key = _norm(hit.content)
        if key in seen:
            continue
        seen.add(key)
        if hit.rule.exclusive and not hit.task:
            chosen = [h for h in chosen if h.task or h.rule.exclusive != hit.rule.exclusive]
        chosen.append(hit)
    return chosen


def _change_set(document: MemoryDocument, hits: Iterable[_Hit], rules: _RuleSet) -> ChangeSet:
    chosen = _select(hits)
    existing = {_norm(f.content) for f in document.facts}
    new_facts: list[NewFact] = []
    removals: list[FactRemoval] = []
    removed: set[str] = set()
    for hit in chosen:
        if _norm(hit.content) not in existing:
            new_facts.append(
                NewFact(
                    content=hit.content,
                    category=hit.rule.category,
                    confidence=hit.rule.confidence,
                    source_error=hit.source_error,
                    scope="task" if hit.task else "user",
                    durability="temporary" if hit.task else "durable",
                )
            )
        if hit.task or not hit.rule.exclusive:
            continue
        form = rules.exclusive_forms[hit.rule.exclusive]
        for fact in document.facts:
            if (
                fact.id not in removed
                and not fact.is_manual
                and _norm(fact.content) != _norm(hit.content)
                and form.fullmatch(fact.content.strip())
            ):
                removed.add(fact.id)
                replaced = len(new_facts) - 1 if _norm(hit.content) not in existing else None
                removals.append(
                    FactRemoval(
                        fact.id, reason=f"superseded by: {hit.content}", replaced_by=replaced
                    )
                )
    return ChangeSet(
        summaries=_summaries(document, [h for h in chosen if not h.task], rules),
        new_facts=tuple(new_facts),
        removals=tuple(removals),
    )


def _summaries(
    document: MemoryDocument, hits: Sequence[_Hit], rules: _RuleSet
) -> tuple[SummaryUpdate, ...]:
    updates: list[SummaryUpdate] = []
    for section in USER_SECTIONS:
        clauses = [h for h in hits if section in h.rule.sections]
        if not clauses:
            continue
        current = document.summary(section)
        merged = _merge_summary(current, clauses, rules)
        if merged != current.strip():
            updates.append(SummaryUpdate(section=section, summary=merged))
    return tuple(updates)


def _merge_summary(current: str, hits: Sequence[_Hit], rules: _RuleSet) -> str:
    """Existing clauses plus the new ones: superseded clauses replaced, repeats skipped,
    the oldest clauses dropped when the text would pass ``MAX_SUMMARY_CHARS``."""
    clauses = [c.strip(" .") for c in _CLAUSE_SPLIT.split(current) if c.strip(" .")]
    changed = False
    for hit in hits:
        new = _norm(hit.content)
        if hit.rule.exclusive:
            form = rules.exclusive_forms[hit.rule.exclusive]
            kept = [c for c in clauses if _norm(c) == new or not form.fullmatch(c)]
            changed = changed or len(kept) != len(clauses)
            clauses = kept
        if any(new in _norm(c) for c in clauses):
            continue
        clauses.append(hit.content)
        changed = True
    if not changed:
        return current.strip()
    joiner = "；" if not any(_LATIN.search(c) for c in clauses) else "; "
    while len(clauses) > 1 and len(joiner.join(clauses)) > MAX_SUMMARY_CHARS:
        clauses.pop(0)
    text = joiner.join(clauses)
    if len(text) > MAX_SUMMARY_CHARS:
        text = text[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    return text
