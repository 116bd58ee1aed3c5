"""A Spark standalone cluster — one master, two workers — started from the pyspark installation
on 127.0.0.1, for tests. Each JVM runs in the foreground (``SPARK_NO_DAEMONIZE``) as a child of
the test, so that it is stopped by its own PID."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pyspark

from routewatch.testing.processes import free_port, stop, wait_for

SPARK_HOME = Path(pyspark.__file__).resolve().parent


@dataclass
class SparkCluster:
    workdir: Path
    workers: int = 2
    cores_per_worker: int = 1
    memory_per_worker: str = "2g"
    port: int = 0
    ui_port: int = 0
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_NO_DAEMONIZE": "1",
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
            # no REST submission server (it would take port 6066 whatever else runs)
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }

    def _run(self, name: str, *argv: str) -> None:
        log = (self.workdir / f"{name}.log").open("wb")
        self._procs[name] = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *argv],
            env=self._env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def state(self) -> dict[str, Any]:
        """The master's own account of itself (its web UI's JSON)."""
        state: dict[str, Any] = httpx.get(
            f"http://127.0.0.1:{self.ui_port}/json/", timeout=2, follow_redirects=True
        ).json()
        return state

    def _alive(self) -> None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Spark {name} exited with status {proc.returncode}:\n{tail}")

    def _workers_alive(self) -> bool:
        self._alive()
        try:
            return int(self.state().get("aliveworkers", 0)) == self.workers
        except (httpx.HTTPError, ValueError):
            return False

    def start(self, timeout: float = 120) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port, self.ui_port = free_port(), free_port()
        self._run(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port)),
        )
        for i in range(1, self.workers + 1):
            self._run(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                *("--host", "127.0.0.1", "--webui-port", str(free_port())),
                *("--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker),
                *("--work-dir", str(self.workdir / f"worker-{i}")),
            )
        wait_for(self._workers_alive, timeout, f"{self.workers} Spark workers joining", 0.5)

    def stop(self, timeout: float = 60) -> None:
        """Workers first, then the master, each by its PID."""
        for name in sorted(self._procs, key=lambda n: n == "master"):
            stop(self._procs[name], timeout)
        self._procs.clear()


@contextlib.contextmanager
def running_cluster(workdir: Path) -> Iterator[SparkCluster]:
    cluster = SparkCluster(workdir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
