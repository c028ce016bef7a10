"""Browser tests: Debian's Chromium driven by Playwright against the real app served by
uvicorn (``gpu-advisor serve``) on a real database built by the real migrations (a copy of the
tests' template database: a SQLite file, or a PostgreSQL database when
GPU_ADVISOR_TEST_DATABASE_URL is set).

One server for the whole package, one browser per module, a fresh context per test. Every test
fails on a console error, an uncaught exception or a dialog (an ``alert`` is how injected
script would show itself). Without Chromium or Playwright the tests skip, saying why, unless
GPU_ADVISOR_REQUIRE_BROWSER=1 (CI sets it), where they fail.
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.usecases.keys import create_key
from tests.conftest import Template
from tests.db.servers import ServerProcess

CHROMIUM_ENV = "GPU_ADVISOR_CHROMIUM"
REQUIRE_ENV = "GPU_ADVISOR_REQUIRE_BROWSER"
CHROMIUM_ARGS = [
    # what this machine's closed network and a root user need (README "The page")
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str | None:
    explicit = os.environ.get(CHROMIUM_ENV)
    if explicit:
        return explicit if Path(explicit).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if chromium_path() is None:
        return "no Chromium (apt-get install -y chromium chromium-driver, or set GPU_ADVISOR_CHROMIUM)"
    return None


@pytest.fixture(scope="session")
def browser_available() -> None:
    why = _missing_browser()
    if why is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {why}")
    pytest.skip(f"browser tests need a browser: {why}")


@dataclass
class Served:
    """The running app and the database behind it."""

    url: str
    database_url: str
    submit_key: str = ""
    admin_key: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def post(self, path: str, body: Any, key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.post(self.url + path, json=body, headers=headers, timeout=30)


@pytest.fixture(scope="session")
def served(
    browser_available: None, template: Template, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("page")
    urls = template.copy(tmp, "page")  # real migrations, the shipped catalog and measurements
    database_url = next(urls)
    try:
        engine = make_engine(database_url)
        with UnitOfWork(make_session_factory(engine)) as uow:
            submit = create_key(
                uow, name=f"page-agent-{uuid.uuid4().hex[:6]}", scope="submit", trusted=True
            ).secret
            admin = create_key(uow, name=f"page-admin-{uuid.uuid4().hex[:6]}", scope="admin").secret
        engine.dispose()
        # one server answers every page test from one address: the shipped per-client limits
        # (recommend: 30 a minute, bursts of 10) would turn a fast run's later questions into 429s
        # -- the limits are tested in tests/api/test_limits.py, not here
        server = ServerProcess.serve(
            database_url, tmp / "server.log", env={"GPU_ADVISOR_RATE_LIMITS_ENABLED": "false"}
        ).start()
        try:
            yield Served(url=server.url, database_url=database_url, submit_key=submit, admin_key=admin)
        finally:
            server.stop()
    finally:
        next(urls, None)  # drops the PostgreSQL database


@pytest.fixture(scope="module")
def browser(browser_available: None) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageProblems:
    """What went wrong in the page: console errors, uncaught exceptions, dialogs."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.expected_statuses: set[int] = set()

    def expect_status(self, *statuses: int) -> None:
        """A test that provokes API refusals on purpose: Chromium logs each refused fetch as a
        console error ("Failed to load resource ... status of 422"); those, and only those, are
        expected."""
        self.expected_statuses.update(statuses)

    def _console(self, m: Any) -> None:
        if m.type != "error":
            return
        if any(f"status of {s} " in m.text for s in self.expected_statuses) and m.text.startswith(
            "Failed to load resource"
        ):
            return
        self.errors.append(f"console.{m.type}: {m.text} ({m.location.get('url', '')})")

    def attach(self, page: Any) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

        def on_dialog(d: Any) -> None:
            self.dialogs.append(f"{d.type}: {d.message}")
            d.dismiss()

        page.on("dialog", on_dialog)


@functools.cache
def _axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()


def assert_accessible(page: Any, *, exclude: tuple[str, ...] = ()) -> None:
    """axe-core's WCAG 2 A/AA rules on what the page shows now: no violation (labels,
    contrast, accessible names, structure)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_source())  # through the DevTools protocol: not page script, CSP does not apply
    context: dict[str, Any] = {"include": [["body"]], "exclude": [[sel] for sel in exclude]}
    options = {
        "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]},
        "resultTypes": ["violations"],
    }
    results = page.evaluate("([c, o]) => axe.run(c, o)", [context, options])
    found = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in results["violations"]
    ]
    assert found == [], "\n".join(found)


@pytest.fixture()
def problems() -> PageProblems:
    return PageProblems()


def new_page(
    browser: Any, problems: PageProblems, *, locale: str = "en-US", width: int = 1280, height: int = 900
) -> Any:
    context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems.attach(page)
    return page


@pytest.fixture()
def page(browser: Any, problems: PageProblems) -> Iterator[Any]:
    pg = new_page(browser, problems)
    yield pg
    pg.context.close()
    assert problems.errors == [], "the page logged errors"
    assert problems.dialogs == [], "the page opened a dialog"
