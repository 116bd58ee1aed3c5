"""docs/screenshots.py, the script that draws the console's pages for the README and docs, runs
in CI: it succeeds over the demo scenario (no error in the browser's console, no request but to
127.0.0.1), and fails when the browser's console shows an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "docs" / "screenshots.py"


def _run(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        check=False,
    )


def test_the_screenshot_script_draws_every_page_without_a_browser_error(tmp_path: Path) -> None:
    result = _run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("console-now", "console-topic", "console-broker", "console-topics"):
        image = tmp_path / f"{name}.png"
        assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert image.stat().st_size > 10_000  # (a page, not a blank)
