"""What ``routewatch stream`` prints for its operator (streaming/job/console.py), over a real
store the job's step fills: the alerts each batch opened and resolved, a line per batch at
--verbose, and a falling-behind warning in routewatch's words, at most every 5 minutes."""

from __future__ import annotations

import io
from pathlib import Path

from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.store import open_store
from streaming.job.console import Console
from streaming.settings import StreamingSettings
from tests.support.stores import EngineJob


def _said(console: Console, out: io.StringIO, settings: StreamingSettings, ms: int) -> list[str]:
    store = open_store(settings.store_url, readonly=True)
    try:
        console.batch(store, console.batches, 10, ms, "1 s")
    finally:
        store.close()
    lines = out.getvalue().splitlines()
    out.seek(0)
    out.truncate()
    return lines


def test_each_alert_once_as_it_opens_and_resolves_and_a_batch_line_when_verbose(
    tmp_path: Path,
) -> None:
    settings = load(StreamingSettings, data_dir=tmp_path)
    store = open_store(settings.store_url)
    out = io.StringIO()
    console = Console(out, trigger_ms=10_000, verbose=True)
    console.start(store)
    store.close()
    job = EngineJob(settings)
    lines = [encode(e).decode() for e in SCENARIOS["broker-dies"].run(seed=1)]

    job.write(lines[:50])
    first = _said(console, out, settings, 800)
    job.write(lines[50:])
    second = _said(console, out, settings, 900)
    third = _said(console, out, settings, 700)

    opened = [line.split()[:3] for line in first + second if not line.startswith("  batch")]
    assert ["opened", "critical", "BROKER_EXPIRED"] in opened
    assert all(words[0] in ("opened", "resolved", "updated") for words in opened)
    assert first[-1] == "  batch 0: 10 input line(s) in 800 ms, lag 1 s"
    assert third == ["  batch 2: 10 input line(s) in 700 ms, lag 1 s"]  # nothing new: no alert


def test_a_job_that_falls_behind_says_so_once_in_five_minutes(tmp_path: Path) -> None:
    settings = load(StreamingSettings, data_dir=tmp_path)
    open_store(settings.store_url).close()
    out = io.StringIO()
    console = Console(out, trigger_ms=10_000)

    warm = [_said(console, out, settings, 25_000) for _ in range(2)]  # the JVM warming up
    slow = _said(console, out, settings, 12_345)
    again = _said(console, out, settings, 15_000)

    assert warm == [[], []]
    assert slow == [
        "routewatch: the job falls behind its input: batch 2 took 12.3 s, longer than its "
        "trigger interval of 10 s (1 such batch(es) since the last warning), so alerts come "
        "later than they could. Give it more cores (ROUTEWATCH_SPARK_MASTER=local[N]) or a "
        "longer trigger (ROUTEWATCH_TRIGGER_INTERVAL_S); docs/operations.md, Sizing."
    ]
    assert again == []  # (within 5 minutes of the last)
