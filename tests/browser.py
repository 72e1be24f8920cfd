"""Headless Chromium (Debian's package) driven by playwright, for tests that look at pages.

``chromium_page()`` yields a page, or skips the test with the reason when the browser or
playwright is missing (in CI, with SUMMARYLIB_CI=1, a missing browser fails instead).
``wait_until(page, js)`` waits for a JavaScript expression on pages whose CSP forbids eval.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = os.environ.get("SUMMARYLIB_CHROMIUM", "/usr/bin/chromium")
# No connection leaves the machine: background services off, no first-run work.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed"
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@contextmanager
def chromium_page(width: int = 1400, height: int = 900) -> Iterator[Any]:
    why = missing()
    if why is not None:
        if os.environ.get("SUMMARYLIB_CI"):
            pytest.fail(f"CI needs the browser: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def wait_until(page: Any, expression: str, timeout_ms: float = 30_000) -> Any:
    """Waits until the JavaScript ``expression`` is truthy in ``page`` and returns its value.

    Our viewer's page forbids eval by its Content-Security-Policy. Playwright evaluates a
    bare expression with eval again at every poll, and only its first, synchronous check is
    exempt, so a page slower than that check failed with an EvalError. A function is
    evaluated once, in that first check, and then only called.
    """
    return page.wait_for_function(f"() => ({expression})", timeout=timeout_ms).json_value()
