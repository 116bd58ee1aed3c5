"""``routewatch api`` serves the app with uvicorn on the address it is given."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from routewatch.testing.processes import free_port, wait_for


def test_api_serves_on_the_given_port_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "routewatch.cli", "api", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, 60, f"the API answering on {url}")
        ready = httpx.get(f"{url}/readyz", timeout=5)
        assert ready.status_code == 503  # no store yet: it says which check failed
        assert "does not exist yet" in ready.json()["checks"]["store"]
        assert httpx.get(f"{url}/openapi.json", timeout=5).json()["info"]["title"] == "routewatch"
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal (exit status 143)
        assert proc.wait(30) in (0, -signal.SIGTERM)
    assert proc.stdout is not None
    assert "Finished server process" in proc.stdout.read().decode()
