"""The web page in a real browser (Debian's Chromium driven by Playwright) against a live
``memfold serve``: edit and delete a fact, see the store change and the injection preview
follow; a user key sees only its own memory; the page fits a phone's width.

Skips on a developer machine without Chromium or Playwright; fails when ``CI`` is set.
Set ``MEMFOLD_SCREENSHOT=docs/web-page.png`` to refresh the README's screenshot.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory
from memfold.server.testing import ServeProcess

CHROMIUM = Path(os.environ.get("MEMFOLD_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ADMIN_KEY = "browser-admin-key-0123456789"
ALICE_KEY = "browser-alice-key-0123456789"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "web-page.png"

pytestmark = pytest.mark.slow


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so the browser tests must run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _skip_or_fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("playwright is not installed (it is in the dev dependencies)")
    with sync_playwright() as driver:
        yield driver


ONBOARDING = [
    {"role": "user", "content": "I live in Lisbon and I work as a nurse."},
    {"role": "assistant", "content": "Nice to meet you!"},
    {"role": "user", "content": "Can you suggest an editor setup?"},
    {"role": "assistant", "content": "Since you like Emacs, try these packages."},
    {"role": "user", "content": "No, that's wrong: I use Vim, not Emacs."},
    {"role": "assistant", "content": "Sorry, noted: Vim."},
    {"role": "user", "content": "I prefer short answers with code first."},
    {"role": "assistant", "content": "Will do."},
]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """Alice's memory: learned from a conversation, plus facts added by hand."""
    home = tmp_path_factory.mktemp("browser") / "home"
    with Memory(home=home, start_workers=False) as mem:
        mem.update(ONBOARDING, thread_id="onboarding", user_id="alice")
        for content, category, confidence in (
            ("Drinks green tea every morning", "preference", 0.9),
            ("Has a dog named Biscuit", "context", 0.85),
            ("Is learning Rust in the evenings", "goal", 0.8),
        ):
            mem.add_fact(content, category=category, confidence=confidence, user_id="alice")
        mem.add_fact("Uses PostgreSQL 16 at work", category="knowledge", user_id="alice",
                     agent="coder")  # fmt: skip
        mem.add_fact("Plays the cello in an orchestra", user_id="bob")
    return home


@pytest.fixture(scope="module")
def server(playwright, home) -> Iterator[ServeProcess]:
    keys = f"admin:{ADMIN_KEY}\nuser:alice:{ALICE_KEY}"
    with ServeProcess(home=home, env={"MEMFOLD_API_KEYS": keys}) as live:
        yield live


@pytest.fixture
def browser(playwright, request) -> Iterator[Any]:
    width = getattr(request, "param", 1200)
    context = playwright.chromium.launch_persistent_context(
        tempfile.mkdtemp(prefix="memfold-chromium-"),
        executable_path=str(CHROMIUM),
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": width, "height": 900},
    )
    context.set_default_timeout(20_000)
    try:
        yield context
    finally:
        context.close()


def _sign_in(page: Any, url: str, key: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.locator("#key-dialog[open]").wait_for()
    page.fill("#key-input", key)
    page.click("#key-form button[value=save]")
    page.locator("#who").filter(has_text="admin").or_(
        page.locator("#who").filter(has_text="signed in")
    ).wait_for()
    assert errors == []


def _facts(home: Path, **scope: Any) -> list[str]:
    with Memory(home=home, start_workers=False) as mem:
        return sorted(f.content for f in mem.get(**scope).facts)


def test_edit_and_delete_a_fact_change_the_store_and_the_preview(browser, server, home):
    page = browser.new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    _sign_in(page, server.url, ADMIN_KEY)
    page.select_option("#user", "alice")
    tea = page.locator(".fact", has_text="Drinks green tea every morning")
    tea.wait_for()
    stored = _facts(home, user_id="alice")
    assert page.locator(".fact").count() == len(stored)
    learned = page.locator(".fact", has_text="Lives in Lisbon")
    assert "thread onboarding" in learned.inner_text()
    assert "0.90" in tea.inner_text()
    assert "added by hand" in tea.inner_text()

    tea.get_by_role("button", name="Edit").click()
    editor = page.locator(".fact form.edit")
    editor.locator("textarea").fill("Drinks oolong tea every morning")
    editor.get_by_role("button", name="Save").click()
    page.locator(".fact", has_text="Drinks oolong tea every morning").wait_for()
    assert "Drinks oolong tea every morning" in _facts(home, user_id="alice")
    assert "Drinks green tea every morning" not in _facts(home, user_id="alice")

    page.locator(".fact", has_text="Has a dog named Biscuit").get_by_role(
        "button", name="Delete"
    ).click()
    page.locator(".fact", has_text="Biscuit").wait_for(state="detached")
    assert not any("Biscuit" in fact for fact in _facts(home, user_id="alice"))
    assert len(_facts(home, user_id="alice")) == len(stored) - 1

    page.click("button[data-tab=preview]")
    preview = page.locator("#preview-text")
    preview.filter(has_text="oolong").wait_for()
    assert "Biscuit" not in preview.inner_text()
    assert "green tea" not in preview.inner_text()
    assert "of 2000 tokens" in page.inner_text("#preview-meta")

    page.fill("#budget", "80")
    page.click("#preview-form button[type=submit]")
    page.locator("#preview-meta").filter(has_text="of 80 tokens").wait_for()
    assert page.locator("#preview-dropped li[data-id]").count() >= 1

    page.click("button[data-tab=facts]")
    page.locator(".fact").first.wait_for()
    page.locator("#notice").wait_for(state="hidden")  # a success notice goes by itself
    shot = Path(os.environ.get("MEMFOLD_SCREENSHOT") or tempfile.mktemp(suffix=".png"))
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes().startswith(b"\x89PNG")


def test_a_user_key_sees_only_its_own_memory(browser, server):
    page = browser.new_page()
    _sign_in(page, server.url, ALICE_KEY)
    assert "signed in as alice" in page.inner_text("#who")
    page.locator(".fact").first.wait_for()
    options = page.locator("#user option").all_inner_texts()
    assert len(options) == 1
    assert options[0].startswith("alice")
    assert "cello" not in page.content()
    status = page.evaluate(
        """async (key) => (await fetch('/api/v1/users/bob/memory',
               {headers: {Authorization: 'Bearer ' + key}})).status""",
        ALICE_KEY,
    )
    assert status == 404


def test_search_and_history_tabs(browser, server):
    page = browser.new_page()
    _sign_in(page, server.url, ADMIN_KEY)
    page.select_option("#user", "alice")
    page.locator(".fact").first.wait_for()
    page.click("button[data-tab=search]")
    page.fill("#search-q", "rust")
    page.click("#search-form button")
    page.locator("#search-hits li", has_text="Is learning Rust").wait_for()
    page.click("button[data-tab=history]")
    page.locator("#history li").first.wait_for()
    assert "added" in page.inner_text("#history").lower()


@pytest.mark.parametrize("browser", [390], indirect=True)
def test_the_page_fits_a_phone(browser, server):
    page = browser.new_page()
    _sign_in(page, server.url, ADMIN_KEY)
    page.select_option("#user", "alice")
    page.locator(".fact").first.wait_for()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0


def test_the_committed_screenshot_is_a_png():
    data = SCREENSHOT.read_bytes()
    assert data.startswith(b"\x89PNG")
    assert len(data) > 10_000
