"""``routewatch api`` serves the app with uvicorn on the address it is given."""

from __future__ import annotations

import os
import signal
import socket
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


def test_a_port_in_use_is_one_sentence_and_status_2(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "routewatch.cli", "api", "--port", str(port)],
            capture_output=True,
            text=True,
            env={**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)},
            check=False,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stderr == (
        f"routewatch: cannot listen on 127.0.0.1:{port} (Address already in use): stop what "
        "uses it, or give another port with --port or ROUTEWATCH_API_PORT.\n"
    )
