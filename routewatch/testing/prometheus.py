"""A real Prometheus server (Debian's ``prometheus`` package) on a free 127.0.0.1 port, for tests.

``.ci/install --test`` installs the package; ``ROUTEWATCH_TEST_PROMETHEUS`` and
``ROUTEWATCH_TEST_PROMTOOL`` point at other binaries. The server is started with a temporary
configuration and storage and stopped by its own PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from routewatch.testing.processes import free_port, stop, wait_for


def binary(name: str) -> str:
    """The path of ``prometheus`` or ``promtool``; fails with a sentence on how to install it."""
    path = os.environ.get(f"ROUTEWATCH_TEST_{name.upper()}") or shutil.which(name)
    if not path:
        raise RuntimeError(
            f"{name} was not found: run `bash .ci/install --test` (it installs Debian's "
            f"prometheus package) or set ROUTEWATCH_TEST_{name.upper()} to its path."
        )
    return path


@dataclass
class Prometheus:
    url: str
    process: subprocess.Popen[bytes]

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        response = httpx.get(f"{self.url}{path}", params=params, timeout=10)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"Prometheus refused {params}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query now; the result vector."""
        return list(self._get("/api/v1/query", {"query": expr})["result"])

    def query_range(
        self, expr: str, start: float, end: float, step: float = 1
    ) -> list[dict[str, Any]]:
        """A range query; the result matrix (one entry per series, with its values)."""
        params = {"query": expr, "start": start, "end": end, "step": step}
        return list(self._get("/api/v1/query_range", params)["result"])

    def label_values(self, label: str, match: str) -> list[str]:
        return list(self._get(f"/api/v1/label/{label}/values", {"match[]": match}))

    def scraped(self, job: str) -> bool:
        """True once the job's target has been scraped successfully."""
        targets = self._get("/api/v1/targets", {"state": "active"})["activeTargets"]
        return any(t["labels"].get("job") == job and t["health"] == "up" for t in targets)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def running_prometheus(config: dict[str, Any], workdir: Path, *files: Path) -> Iterator[Prometheus]:
    """Prometheus with ``config`` (and ``files`` beside it: rule files) until the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, workdir / f.name)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary("prometheus"),
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(
            lambda: (process.poll() is None and _ready(url)) or process.poll() is not None,
            60,
            "Prometheus becoming ready",
        )
        if process.poll() is not None:
            raise RuntimeError(
                f"Prometheus exited at start: {(workdir / 'prometheus.log').read_text()[-2000:]}"
            )
        yield Prometheus(url, process)
    finally:
        stop(process)
        log.close()
