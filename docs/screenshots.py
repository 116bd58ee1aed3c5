"""Screenshots of the console, for the README and docs/api.md: the demo scenario's alerts run
through the job's own step into a store in a temporary directory, ``routewatch api`` serves it
on a free 127.0.0.1 port, and a headless Chromium (Debian's, with its chromedriver) draws each
page. Fails — exit status 1, with the messages — if the browser's console shows an error or a
page asks any host but 127.0.0.1 for anything.

    .venv/bin/python docs/screenshots.py            # writes docs/images/console-*.png
    .venv/bin/python docs/screenshots.py --out DIR

Run by tests/api/console/test_screenshots.py in .ci/run (into a temporary directory); the images
in docs/images/ are its output, committed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WIDTH = 1280
PAGES = {
    "console-now": "/",
    "console-topic": "/ui/topics/DefaultCluster/StuckTopic?hours=24",
    "console-broker": "/ui/brokers/DefaultCluster/broker-b/0?hours=24",
    "console-topics": "/ui/topics",
}


def _store(data: Path) -> None:
    """The demo scenario through the job's own step, written as the job writes it."""
    from emitter.scenarios import SCENARIOS
    from routewatch.codec import encode
    from routewatch.settings import load
    from routewatch.store import open_store
    from streaming.engine.runner import LineRun
    from streaming.settings import StreamingSettings

    settings = load(StreamingSettings, data_dir=data)
    lines = [encode(e).decode() for e in SCENARIOS["demo-mixed"].run(seed=1)]
    run = LineRun(lateness_ms=settings.lateness_ms, dedupe_horizon_ms=settings.dedupe_horizon_ms)
    store = open_store(settings.store_url)
    try:
        store.write_batch("screenshots", 0, run.batch(lines))
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "images", help="where the PNGs go")
    args = parser.parse_args(argv)
    from routewatch.testing.browser import running_browser
    from routewatch.testing.processes import (
        api_answers,
        free_port,
        start_routewatch,
        stop,
        wait_for,
    )

    args.out.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="routewatch-screenshots-") as tmp:
        data = Path(tmp)
        _store(data)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(data)}
        log = data / "api.log"
        proc = start_routewatch(["api", "--port", str(port)], env, log)
        try:
            wait_for(lambda: api_answers(url, proc, log), 60, f"the API answering on {url}")
            with running_browser(width=WIDTH, height=900, timezone="UTC") as browser:
                driver = browser.driver
                for name, path in PAGES.items():
                    driver.set_window_size(WIDTH, 900)
                    driver.get(url + path)
                    # the whole page, up to a screen and a half more
                    height = driver.execute_script("return document.documentElement.scrollHeight")
                    driver.set_window_size(WIDTH, min(int(height) + 140, 2200))
                    target = args.out / f"{name}.png"
                    driver.save_screenshot(str(target))
                    print(f"{target}  ({path})")
                problems += [f"browser console: {m['message']}" for m in browser.errors()]
                problems += [f"a request to {h}" for h in browser.hosts() - {"127.0.0.1"}]
        finally:
            stop(proc)
    for problem in problems:
        print(f"screenshots: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
