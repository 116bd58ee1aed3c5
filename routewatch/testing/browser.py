"""A real headless browser (Debian's ``chromium`` and its ``chromium-driver``), for the console's
tests and its screenshot script.

``.ci/install --test`` installs both; ``ROUTEWATCH_TEST_CHROMIUM`` and
``ROUTEWATCH_TEST_CHROMEDRIVER`` point at other binaries. The driver listens on a free
127.0.0.1 port and is stopped with the session; the browser's own background traffic
(updates, sync, metrics) is off. The session records what the page asked the network for and
what it wrote to its console, so that a test can hold both to account.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["Browser", "binaries", "running_browser"]


def binaries() -> tuple[str, str]:
    """(chromium, chromedriver); fails with a sentence on how to install them."""
    chromium = (
        os.environ.get("ROUTEWATCH_TEST_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    driver = os.environ.get("ROUTEWATCH_TEST_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chromium or not driver:
        missing = "chromium" if not chromium else "chromedriver"
        raise RuntimeError(
            f"{missing} was not found: run `bash .ci/install --test` (it installs Debian's "
            "chromium and chromium-driver packages) or set ROUTEWATCH_TEST_CHROMIUM and "
            "ROUTEWATCH_TEST_CHROMEDRIVER to their paths."
        )
    return chromium, driver


class Browser:
    """A Selenium session on headless Chromium, with the page's network requests and console
    messages kept as they come."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.requests: list[str] = []
        self.console: list[dict[str, Any]] = []

    def collect(self) -> None:
        """Move the browser's logs since the last call into :attr:`requests` and
        :attr:`console`."""
        for entry in self.driver.get_log("performance"):
            message = orjson.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
        self.console += self.driver.get_log("browser")

    def errors(self) -> list[dict[str, Any]]:
        """The console's messages at SEVERE level (errors, failed loads) so far."""
        self.collect()
        return [m for m in self.console if m.get("level") == "SEVERE"]

    def hosts(self) -> set[str]:
        """Every host the page asked for something (data: and blob: URLs aside)."""
        import urllib.parse

        self.collect()
        return {
            urllib.parse.urlsplit(url).hostname or ""
            for url in self.requests
            if not url.startswith(("data:", "blob:", "about:"))
        }


@contextlib.contextmanager
def running_browser(
    width: int = 1366, height: int = 900, timezone: str | None = None
) -> Iterator[Browser]:
    """A headless Chromium at ``width`` by ``height`` until the block ends; in ``timezone``
    (an IANA name) rather than the machine's, if given."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from routewatch.testing.processes import free_port

    chromium, driver_path = binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",  # (the tests may run as root)
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--disable-extensions",
        "--metrics-recording-only",
        "--lang=en-US",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    env = {**os.environ, **({"TZ": timezone} if timezone else {})}
    service = Service(executable_path=driver_path, port=free_port(), env=env)
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield Browser(driver)
    finally:
        driver.quit()
