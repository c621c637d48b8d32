"""The README cannot drift: every Python block in it runs, and every file the documents
name exists.

A block runs in a fresh interpreter (so interpreter-exit behaviour is real) in an empty
working directory, with the network blocked. Around a block, HTML comments (not shown
on GitHub) may declare:

- ``<!-- snippet-setup`` … ``-->`` right before it: code that runs first, for what the
  reader is assumed to have (``messages``, a chat ``model``);
- ``<!-- snippet-check`` … ``-->`` right after it: assertions that run after it, in the
  same interpreter, so a snippet that silently does nothing fails;
- ``<!-- snippet-skip: reason -->`` right before it: the block is not run (a reason is
  required, and the skip is reported by pytest).

New sections need nothing else: their blocks are found and run by this file.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_FENCE = re.compile(r"^```(\w*)\s*$")
_COMMENT = re.compile(r"<!--\s*snippet-(setup|check|skip)(:?)(.*?)-->", re.S)

_OFFLINE = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("a README snippet tried to use the network")

socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


@dataclass(frozen=True)
class Snippet:
    name: str
    code: str
    setup: str = ""
    check: str = ""
    skip: str | None = None


def _comment_at(text: str, *, before: bool) -> tuple[str, str] | None:
    """The snippet comment directly before (or after) a block: (kind, body)."""
    stripped = text.rstrip() if before else text.lstrip()
    matches = list(_COMMENT.finditer(stripped))
    if not matches:
        return None
    found = matches[-1] if before else matches[0]
    edge = found.end() == len(stripped) if before else found.start() == 0
    if not edge:
        return None
    kind, colon, body = found.groups()
    return kind, (body.strip() if colon else textwrap.dedent(body).strip("\n"))


def snippets(markdown: str) -> list[Snippet]:
    lines = markdown.splitlines(keepends=True)
    found: list[Snippet] = []
    heading = "top"
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            heading = line.strip("# \n")
        fence = _FENCE.match(line)
        if not fence:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        if fence.group(1) == "python":
            before = _comment_at("".join(lines[:index]), before=True)
            after = _comment_at("".join(lines[end + 1 :]), before=False)
            number = sum(1 for s in found if s.name.startswith(heading)) + 1
            found.append(
                Snippet(
                    name=f"{heading} #{number}",
                    code="".join(lines[index + 1 : end]),
                    setup=before[1] if before and before[0] == "setup" else "",
                    check=after[1] if after and after[0] == "check" else "",
                    skip=before[1] if before and before[0] == "skip" else None,
                )
            )
        index = end + 1
    return found


ALL = snippets(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_snippets_and_the_parser_finds_their_comments():
    assert len(ALL) >= 3
    assert any(s.setup for s in ALL)
    assert any(s.check for s in ALL)


def test_the_parser_reads_setup_check_and_skip_comments():
    text = textwrap.dedent(
        """
        ## A
        <!-- snippet-setup
        x = 1
        -->
        ```python
        y = x + 1
        ```
        <!-- snippet-check
        assert y == 2
        -->
        ## B
        <!-- snippet-skip: needs a GPU -->

        ```python
        import torch
        ```
        ```bash
        echo not python
        ```
        """
    )
    first, second = snippets(text)
    assert (first.name, first.setup, first.code, first.check) == (
        "A #1",
        "x = 1",
        "y = x + 1\n",
        "assert y == 2",
    )
    assert (second.name, second.skip, second.setup) == ("B #1", "needs a GPU", "")


@pytest.mark.parametrize("snippet", ALL, ids=lambda s: s.name)
def test_readme_snippet_runs(snippet: Snippet, tmp_path: Path):
    if snippet.skip is not None:
        pytest.skip(snippet.skip)
    script = "\n".join([_OFFLINE, snippet.setup, snippet.code, snippet.check])
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{snippet.name} failed:\n{done.stderr}"
    assert "Traceback" not in done.stderr


# --- S12: no document names a file the repository does not have -------------------------

_DOCUMENTS = ("README.md", "SECURITY.md", "CHANGELOG.md", "REFERENCE.md", "DESIGN.md")
_PATH = re.compile(
    r"`((?:\./)?(?:src|tests|benchmarks|examples|scripts|memfold|\.ci)/[\w./-]+)"
    r"(?:::\w+)?`|\b([A-Z]+\.md)\b|`(LICENSE)`"
)


def _cited(text: str) -> set[str]:
    return {next(g for g in m.groups() if g) for m in _PATH.finditer(text)}


def _exists(name: str) -> bool:
    path = name.removeprefix("./")
    return any((base / path).exists() for base in (ROOT, ROOT / "src"))


@pytest.mark.parametrize("document", _DOCUMENTS)
def test_every_file_a_document_names_exists(document: str):
    text = (ROOT / document).read_text(encoding="utf-8")
    missing = sorted(name for name in _cited(text) if not _exists(name))
    assert missing == [], f"{document} names files that do not exist: {missing}"


def test_every_markdown_file_the_code_cites_exists():
    cited = set()
    for path in (ROOT / "src").rglob("*.py"):
        cited |= set(re.findall(r"\b([A-Z]+\.md)\b", path.read_text(encoding="utf-8")))
    assert cited, "expected the code to cite REFERENCE.md"
    assert sorted(name for name in cited if not (ROOT / name).exists()) == []


def test_the_license_file_matches_the_package_metadata():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert "LICENSE" in project["license-files"]
