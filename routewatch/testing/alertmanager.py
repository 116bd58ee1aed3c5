"""A real Alertmanager (Debian's ``prometheus-alertmanager``) on a free 127.0.0.1 port, for tests.

``.ci/install --test`` installs the package; ``ROUTEWATCH_TEST_ALERTMANAGER`` points at another
binary. Its gossip (HA cluster) listener is off, so it binds 127.0.0.1 alone; it keeps its
silences in its own data directory, so a restart (:meth:`Alertmanager.start` after
:meth:`Alertmanager.stop`) keeps them, and forgets its alerts, as a real one does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml

from routewatch.testing.processes import free_port, stop, wait_for

__all__ = ["Alertmanager", "binary", "running_alertmanager"]


def binary() -> str:
    """The Alertmanager binary; fails with a sentence on how to install it."""
    path = (
        os.environ.get("ROUTEWATCH_TEST_ALERTMANAGER")
        or shutil.which("prometheus-alertmanager")
        or shutil.which("alertmanager")
    )
    if not path:
        raise RuntimeError(
            "Alertmanager was not found: run `bash .ci/install --test` (it installs Debian's "
            "prometheus-alertmanager package) or set ROUTEWATCH_TEST_ALERTMANAGER to its path."
        )
    return path


class Alertmanager:
    """One Alertmanager with ``config`` in ``workdir``; started by :func:`running_alertmanager`."""

    def __init__(self, config: dict[str, Any], workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "alertmanager.yml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.workdir / "alertmanager.log").open("ab")
        self.process = subprocess.Popen(
            [
                binary(),
                f"--config.file={self.config_path}",
                f"--storage.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",  # no gossip listener (it binds every address)
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        process = self.process
        wait_for(
            lambda: process.poll() is not None or self._ready(),
            60,
            "Alertmanager becoming ready",
        )
        if process.poll() is not None:
            text = (self.workdir / "alertmanager.log").read_text()[-2000:]
            raise RuntimeError(f"Alertmanager exited at start: {text}")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def _get(self, path: str, **params: Any) -> Any:
        response = httpx.get(f"{self.url}/api/v2{path}", params=params, timeout=10)
        response.raise_for_status()
        return response.json()

    def alerts(self, **params: Any) -> list[dict[str, Any]]:
        """Its alerts (active, silenced and inhibited by default), as /api/v2/alerts gives them."""
        return list(self._get("/alerts", **params))

    def silences(self) -> list[dict[str, Any]]:
        return list(self._get("/silences"))

    def add_silence(self, matchers: dict[str, str], ends_at: str, comment: str) -> str:
        body = {
            "matchers": [
                {"name": k, "value": v, "isRegex": False, "isEqual": True}
                for k, v in matchers.items()
            ],
            "startsAt": "2000-01-01T00:00:00Z",
            "endsAt": ends_at,
            "createdBy": "an operator",
            "comment": comment,
        }
        response = httpx.post(f"{self.url}/api/v2/silences", json=body, timeout=10)
        response.raise_for_status()
        return str(response.json()["silenceID"])


@contextlib.contextmanager
def running_alertmanager(config: dict[str, Any], workdir: Path) -> Iterator[Alertmanager]:
    """Alertmanager with ``config`` until the block ends (stopped by its own PID)."""
    am = Alertmanager(config, workdir)
    am.start()
    try:
        yield am
    finally:
        am.stop()
