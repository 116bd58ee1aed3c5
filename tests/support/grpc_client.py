"""RocketMQ 5.x's gRPC client for Java (``rocketmq-client-java``) through a proxy, for tests.

``tests/support/java/GrpcProbe.java`` is compiled on first use against the ``grpc-client`` part
(one shaded jar, resolved by the test install step) into ``.cache/grpc-probe/<digest>/`` and run
in a JVM of its own (it must not share the proxy's class path): one producer sends one message
per ``send:TOPIC`` step, ``until:TOPIC`` sends every 200 ms until a send succeeds, and
``declare:TOPIC`` builds a producer with the topic declared (its route is fetched at start).
Each step's outcome is one :class:`GrpcOutcome`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from routewatch.java import compile_cached
from routewatch.testing import parts
from routewatch.testing.rocketmq import JAVA17_OPTS, QUICK_JIT, Proxy

SOURCE = Path(__file__).with_name("java") / "GrpcProbe.java"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "grpc-probe"
_RESPONSE_CODE = re.compile(r"response-code=(\d+)")


@dataclass(frozen=True)
class GrpcOutcome:
    """One step: ``ok``, or the exception's class and its message with its causes'."""

    step: str
    ok: bool
    error: str = ""
    message: str = ""
    message_id: str = ""
    attempts: int = 1

    @property
    def response_code(self) -> int | None:
        """The proxy's status code the client put in its message (``response-code=40402``)."""
        match = _RESPONSE_CODE.search(self.message)
        return int(match.group(1)) if match else None


def client_jars() -> Path:
    """The gRPC client part's ``lib/``, or skip the test saying how to install it."""
    try:
        return parts.home("grpc-client") / "lib"
    except parts.PartMissingError as exc:
        pytest.skip(str(exc))


def probe(proxy: Proxy, steps: list[str], workdir: Path, timeout: float = 120) -> list[GrpcOutcome]:
    """Run the steps through ``proxy`` in one client JVM; their outcomes, in order."""
    lib = client_jars()
    classes = compile_cached([SOURCE], CACHE, "GrpcProbe.class", lib.parent)
    workdir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            shutil.which("java") or "java",
            "-Xmx128m",
            *JAVA17_OPTS,
            QUICK_JIT,
            f"-Duser.home={workdir}",  # the client's log: ~/logs/rocketmq/rocketmq-client.log
            "-cp",
            f"{classes}:{lib}/*",
            "GrpcProbe",
            proxy.addr,
            *steps,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith('{"step"')]
    if result.returncode != 0 or len(lines) != len(steps):
        raise RuntimeError(
            f"the gRPC probe exited with status {result.returncode} after {len(lines)} of "
            f"{len(steps)} steps:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    outcomes = []
    for line in lines:
        fields = json.loads(line)
        outcomes.append(
            GrpcOutcome(
                fields["step"],
                fields["ok"],
                fields.get("error", ""),
                fields.get("message", ""),
                fields.get("messageId", ""),
                fields.get("attempts", 1),
            )
        )
    return outcomes
