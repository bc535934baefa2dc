"""Headless Chromium through Playwright, shared by the browser tests (viewer, labelling, served viewer).

``Chromium`` opens one browser context and records the page errors of every page it opens; with
``files_only=True`` it also records any request that leaves ``file://`` (the static viewer must need no network).
The browser is the system Chromium (apt package ``chromium``, which install.sh installs) or ``$SGIEVAL_CHROMIUM``;
when it is missing the test fails, or skips with ``SGIEVAL_NO_BROWSER=1``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("SGIEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def playwright_api():
    """The ``playwright.sync_api`` module, once the Chromium executable is known to be there.

    Returns:
        The module ``playwright.sync_api``.

    Raises:
        pytest.skip.Exception: playwright is not installed, or Chromium is missing and ``SGIEVAL_NO_BROWSER=1``.
        pytest.fail.Exception: Chromium is missing (install.sh installs it).
    """
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (install.sh does)")
    if not Path(CHROMIUM).is_file():
        if os.environ.get("SGIEVAL_NO_BROWSER") == "1":
            pytest.skip("SGIEVAL_NO_BROWSER=1")
        pytest.fail(f"{CHROMIUM} is missing: run ./install.sh (apt package chromium), or set SGIEVAL_CHROMIUM")
    return sync_api


class Chromium:
    """One headless Chromium browser context; ``page`` is its first page, ``new_page()`` opens more.

    Args:
        profile: a user-data-dir to start from (a fresh folder gives a fresh profile), or None for a throwaway
            in-memory context.
        files_only: also record, in ``errors``, every failed request and every request off ``file://``.
        width, height: the viewport in CSS pixels.
        **context: further Playwright context options (e.g. ``accept_downloads=True``).
    """

    def __init__(
        self,
        profile: Path | None = None,
        *,
        files_only: bool = False,
        width: int = 1400,
        height: int = 1000,
        **context: Any,
    ):
        sync_api = playwright_api()
        self.files_only = files_only
        self.errors: list[str] = []
        self.pw = sync_api.sync_playwright().start()
        self._browser = None
        options = {"viewport": {"width": width, "height": height}, **context}
        try:
            if profile is None:
                self._browser = self.pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                self.ctx = self._browser.new_context(**options)
            else:
                self.ctx = self.pw.chromium.launch_persistent_context(
                    str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **options
                )
            self.page = self.new_page()
        except BaseException:
            self.close()
            raise

    def new_page(self):
        """A new page of this context whose errors go to ``errors``."""
        page = self.ctx.new_page()
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        if self.files_only:
            page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
            page.on(
                "request", lambda r: None if r.url.startswith("file://") else self.errors.append(f"network: {r.url}")
            )
        return page

    def shot(self, folder: Path, name: str) -> Path:
        """A full-page screenshot of ``page`` in ``folder/screenshots/NAME.png``; returns its path."""
        (folder / "screenshots").mkdir(exist_ok=True)
        path = folder / "screenshots" / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        """Close the context, the browser and Playwright (each once, whatever was opened)."""
        try:
            if getattr(self, "ctx", None) is not None:
                self.ctx.close()
            if self._browser is not None:
                self._browser.close()
        finally:
            self.pw.stop()
