"""``routewatch evaluate``: finite traces run to completion, one at a time or as one stream,
by one of two engines that give the same alerts: ``local``, the job's step in this process
(:class:`~streaming.engine.step.Step`, each line read and decoded as the job's read stage
does), and ``spark``, the pipeline with the same stages as the long-running job
(:mod:`streaming.pipeline`)."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import EVENTS_APPLIED, BadLine, ChangeRow, alert_versions
from routewatch.codec import parse
from routewatch.errors import RoutewatchError
from routewatch.validation import BadInput
from streaming.engine.compact import compact
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.step import Step
from streaming.engine.stream import Arrival
from streaming.pipeline import changes
from streaming.settings import StreamingSettings
from streaming.sources.spool import compression_damage, read_lines, trace_files, unread_codec
from streaming.stages.read import line_text

__all__ = [
    "BAD_LINES_NAMED",
    "Evaluated",
    "check_readable",
    "evaluate_local",
    "evaluate_runs",
    "evaluate_traces",
    "final_alerts",
    "named_bad_lines",
]

# bad lines named one by one (FILE, line N: what is wrong), the rest counted
BAD_LINES_NAMED = 20


def check_readable(path: Path) -> None:
    """Fail with one sentence when a trace cannot be read: a file that cannot be opened, or a
    compressed one that does not decompress to its end (read once here, before Spark, which
    would fail on it with a stack trace)."""
    try:
        with path.open("rb") as f:
            f.read(1)
    except IsADirectoryError:
        raise RoutewatchError(
            f"{path} is a directory: give its files, or evaluate it with --one-stream."
        ) from None
    except OSError as exc:
        raise RoutewatchError(f"cannot read the trace {path}: {exc.strerror}.") from None
    codec = unread_codec(path)
    if codec is not None:
        raise RoutewatchError(
            f"the trace {path} is compressed with {codec} in Hadoop's framing, which routewatch "
            "does not read: give it uncompressed, or as .gz, .bz2 or .zst."
        )
    damage = compression_damage(path)
    if damage is not None:
        raise RoutewatchError(
            f"the trace {path} is not a whole {path.suffix[1:]} file ({damage}): copy it "
            "again, or give it uncompressed."
        )


@dataclasses.dataclass
class Evaluated:
    """What evaluating one trace (or one stream of several) gave: the alerts it ends with,
    and how many of its lines were events and how many bad input, by reason."""

    alerts: list[dict[str, Any]]
    events: int
    bad: dict[str, int]
    # the first BAD_LINES_NAMED bad lines, each "FILE, line N: what is wrong"
    bad_lines: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        """The lines, in words: ``120 events, 2 lines of bad input (not_json 2)``."""
        bad = sum(self.bad.values())
        words = f"{self.events} event(s)"
        if bad:
            reasons = ", ".join(f"{r} {n}" for r, n in sorted(self.bad.items()))
            words += f", {bad} line(s) of bad input ({reasons})"
        return words


def final_alerts(rows: list[Any]) -> list[Alert]:
    """The last version of each alert among change rows, ordered by opening."""
    latest = {alert.id: alert for alert in alert_versions(rows)}
    return sorted(latest.values(), key=lambda a: (a.opened_at, a.kind, a.id))


def evaluate_traces(
    spark: SparkSession, paths: list[Path], settings: StreamingSettings
) -> dict[str, list[dict[str, Any]]]:
    """Run the pipeline to completion over each trace separately; the alerts each ends with."""
    return {name: run.alerts for name, run in evaluate_runs(spark, paths, settings).items()}


def evaluate_runs(
    spark: SparkSession, paths: list[Path], settings: StreamingSettings, one_stream: bool = False
) -> dict[str, Evaluated]:
    """Run the pipeline to completion over each trace separately — or, with ``one_stream``,
    over all of them (files, or directories such as a spool) as one stream read as the job
    reads a spool, keyed ``stream`` — and say what each gave."""
    for path in paths:
        if not (one_stream and path.is_dir()):
            check_readable(path)
    # The stateful stage's RocksDB state store reports to Spark's state store coordinator, which
    # the driver starts with its streaming query manager; a batch query alone never starts it,
    # and on Spark 4.2 every task then fails to load its state store ("Cannot find endpoint:
    # StateStoreCoordinator"). Asking for the manager starts it.
    spark.streams.active  # noqa: B018
    runs = {"stream": paths} if one_stream else {str(p): [p] for p in paths}
    out: dict[str, Evaluated] = {}
    for name, run in runs.items():
        rows = changes(
            trace_files(spark, run),
            lateness_ms=settings.lateness_ms,
            dedupe_horizon_ms=settings.dedupe_horizon_ms,
            final=True,
            shards=settings.cluster_shards or None,
            lines_of=read_lines,
            known_tables_bytes=settings.known_tables_bytes,
        ).collect()
        evaluated = _evaluated([ChangeRow._make(r) for r in rows])
        if evaluated.bad:
            evaluated.bad_lines = named_bad_lines(stream_files(run))
        out[name] = evaluated
    return out


def _evaluated(rows: list[ChangeRow], bad_lines: list[str] | None = None) -> Evaluated:
    """What a run's change rows say: the alerts it ends with, the events applied, the bad
    input by reason."""
    detected = int(time.time() * 1000)
    alerts = [dataclasses.asdict(StoredAlert.detected(a, detected)) for a in final_alerts(rows)]
    events, bad = 0, Counter[str]()
    for row in rows:
        if row.kind == "bad":
            bad[row.key] += 1
        elif row.kind == "count" and row.key.startswith(f"{EVENTS_APPLIED}|"):
            events += int(row.payload)
    return Evaluated(alerts, events, dict(bad), bad_lines or [])


def stream_files(paths: list[Path]) -> list[Path]:
    """The files of ``paths`` (a directory's own files but hidden ones, as Spark lists them) in
    the order the job reads a spool: by modification time (ms), then path."""
    files = [
        f
        for p in paths
        for f in (sorted(p.iterdir()) if p.is_dir() else [p])
        if f.is_file() and not f.name.startswith((".", "_"))
    ]
    return sorted(files, key=_origin)


def _origin(path: Path) -> str:
    """A file's origin as the job's read stage writes it: modification time, then its URI."""
    mtime = path.stat().st_mtime_ns // 1_000_000
    return f"{mtime:015d}|{path.absolute().as_uri()}|{0:015d}"


def _lines(files: list[Path]) -> Iterator[tuple[Path, int, str, dict[str, Any] | BadInput]]:
    """Every line of ``files``, in order, as the job's read stage reads and decodes it: the
    file, the line's number in it, its text, and its event or why it is bad input (a file
    damaged midway ends with a ``corrupt_file`` line after its readable lines)."""
    by_origin = {_origin(f): f for f in files}
    numbers = dict.fromkeys(by_origin, 0)
    listing = pa.RecordBatch.from_pydict(
        {"path": [str(f.absolute()) for f in by_origin.values()], "origin": list(by_origin)}
    )
    for batch in read_lines(iter([listing])):
        damages = batch.column("damage").to_pylist()
        for value, origin, damage in zip(
            batch.column("value").to_pylist(),
            batch.column("origin").to_pylist(),
            damages,
            strict=True,
        ):
            path = by_origin[origin]
            numbers[origin] += 1
            if damage is not None:
                yield path, numbers[origin], str(path), BadInput("corrupt_file", damage)
                continue
            text, bad = line_text(value, origin)
            yield path, numbers[origin], text, bad if bad is not None else parse(text)


def named_bad_lines(files: list[Path], limit: int = BAD_LINES_NAMED) -> list[str]:
    """The first ``limit`` bad lines of ``files``, each ``FILE, line N: what is wrong``."""
    out: list[str] = []
    for path, number, _, event in _lines(files):
        if isinstance(event, BadInput):
            out.append(f"{path}, line {number}: {event.detail}")
            if len(out) == limit:
                break
    return out


def evaluate_local(
    paths: list[Path], settings: StreamingSettings, one_stream: bool = False
) -> dict[str, Evaluated]:
    """:func:`evaluate_runs` without Spark: each run's lines through the job's step in this
    process, in one batch that ends the input (as the Spark job's batch query does)."""
    for path in paths:
        if not (one_stream and path.is_dir()):
            check_readable(path)
    runs = {"stream": paths} if one_stream else {str(p): [p] for p in paths}
    out: dict[str, Evaluated] = {}
    for name, run in runs.items():
        arrivals: list[Arrival] = []
        forms: list[str | None] = []
        bad: list[tuple[str | None, BadLine]] = []
        named: list[str] = []
        for path, number, text, event in _lines(stream_files(run)):
            if isinstance(event, BadInput):
                bad.append((event.cluster, BadLine(event.reason, event.detail, text)))
                if len(named) < BAD_LINES_NAMED:
                    named.append(f"{path}, line {number}: {event.detail}")
                continue
            key = dedupe_id(event["cluster"], event["event_id"])
            arrivals.append((key, event["ts"], event.get("seq"), text))
            forms.append(compact(event, text))
        step = Step(settings.lateness_ms, settings.dedupe_horizon_ms)
        rows = step(MemoryEntries(), arrivals, final=True, bad=bad, compact=forms)
        out[name] = _evaluated(rows, named)
    return out
