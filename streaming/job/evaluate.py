"""``routewatch evaluate``: the pipeline run to completion over finite traces, one at a time,
with the same stages as the long-running job (:mod:`streaming.pipeline`)."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import EVENTS_APPLIED, ChangeRow, alert_versions
from routewatch.errors import RoutewatchError
from streaming.pipeline import changes
from streaming.settings import StreamingSettings
from streaming.sources.spool import compression_damage, read_lines, trace_files, unread_codec

__all__ = ["Evaluated", "check_readable", "evaluate_runs", "evaluate_traces", "final_alerts"]


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
        detected = int(time.time() * 1000)
        alerts = [dataclasses.asdict(StoredAlert.detected(a, detected)) for a in final_alerts(rows)]
        events, bad = 0, Counter[str]()
        for row in (ChangeRow._make(r) for r in rows):
            if row.kind == "bad":
                bad[row.key] += 1
            elif row.kind == "count" and row.key.startswith(f"{EVENTS_APPLIED}|"):
                events += int(row.payload)
        out[name] = Evaluated(alerts, events, dict(bad))
    return out
