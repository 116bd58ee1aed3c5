"""The client hook library (``emitter/hook/java``) without a cluster: ``HookProbe.java`` hands its
RPCHook the requests and responses RocketMQ's client would, and the tests read the spool the
library wrote. Real sends on a real cluster: ``tests/test_rocketmq_hook.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from emitter.hook.build import build
from routewatch.codec import parse
from routewatch.java import compile_cached
from routewatch.validation import BadInput
from tests.support.rocketmq import require_rocketmq

pytestmark = pytest.mark.rocketmq

PROBE = Path(__file__).with_name("HookProbe.java")
CACHE = Path(__file__).resolve().parents[3] / ".cache" / "routewatch-hook-probe"


def _probe(*args: str) -> dict[str, Any]:
    home = require_rocketmq()
    library = build()
    probe = compile_cached([PROBE], CACHE, "io/routewatch/hook/HookProbe.class", home, [library])
    classpath = os.pathsep.join([str(probe), str(library), str(home / "lib" / "*")])
    result = subprocess.run(
        [
            shutil.which("java") or "java",
            "-Xmx128m",
            "-cp",
            classpath,
            "io.routewatch.hook.HookProbe",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    stats: dict[str, Any] = orjson.loads(result.stdout.splitlines()[-1])
    stats["stderr"] = result.stderr
    return stats


def _spool(spool: Path) -> list[dict[str, Any]]:
    events = []
    for path in sorted(spool.iterdir()):
        for line in path.read_bytes().splitlines():
            event = parse(line)
            assert not isinstance(event, BadInput), (line, event)
            events.append(event)
    return events


def test_a_full_queue_drops_and_counts_and_never_blocks(tmp_path: Path) -> None:
    count = 50_000
    stats = _probe("flood", str(tmp_path), str(count), "16")
    # Every event was either queued or dropped and counted, and every queued one written.
    assert stats["accepted"] + stats["droppedQueueFull"] == count, stats
    assert stats["droppedQueueFull"] > 0 and stats["droppedUnwritable"] == 0, stats
    assert stats["written"] == stats["accepted"] == len(_spool(tmp_path)), stats
    # The application's thread only ever offers: tens of microseconds an event at most.
    assert stats["elapsedMs"] < count * 0.1, stats
    assert stats["stderr"].count("routewatch hook: dropped") == 1, stats["stderr"]


def test_a_send_that_times_out_after_its_template_pull(tmp_path: Path) -> None:
    stats = _probe("timeout", str(tmp_path))
    assert stats["written"] == 3 and stats["dropped"] == 0, stats
    own, template, send = _spool(tmp_path)
    assert (own["type"], own["topic"], own["result"], own["via_default"]) == (
        "route_pull",
        "Fresh",
        "TOPIC_NOT_EXIST",
        False,
    )
    # The pull of TBW102 inside the send is the fallback for the topic sent to, with the
    # client's min(defaultTopicQueueNums 4, the template's 8) queues.
    assert (template["topic"], template["via_default"], template["result"]) == (
        "Fresh",
        True,
        "SUCCESS",
    )
    assert template["namesrv"] == "127.0.0.1:9876"
    assert [
        (q["broker"], q["read_queue_nums"], q["write_queue_nums"], q["perm"])
        for q in template["queues"]
    ] == [("broker-a", 4, 4, 7), ("broker-b", 4, 4, 7)]
    # The send request that never got an answer: TIMEOUT, on the broker it went to.
    assert (send["type"], send["status"], send["broker"], send["queue_id"]) == (
        "send",
        "TIMEOUT",
        "broker-a",
        2,
    )
    assert [e["seq"] for e in (own, template, send)] == [1, 2, 3]
