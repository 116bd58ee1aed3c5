"""``routewatch evaluate``: the pipeline run to completion over finite traces, one at a time,
with the same stages as the long-running job (:mod:`streaming.pipeline`)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import alert_versions
from routewatch.errors import RoutewatchError
from streaming.pipeline import changes
from streaming.settings import StreamingSettings
from streaming.sources.spool import file_lines

__all__ = ["check_readable", "evaluate_traces", "final_alerts"]


def check_readable(path: Path) -> None:
    """Fail with one sentence when a trace cannot be read."""
    try:
        with path.open("rb") as f:
            f.read(1)
    except OSError as exc:
        raise RoutewatchError(f"cannot read the trace {path}: {exc.strerror}.") from None


def final_alerts(rows: list[Any]) -> list[Alert]:
    """The last version of each alert among change rows, ordered by opening."""
    latest = {alert.id: alert for alert in alert_versions(rows)}
    return sorted(latest.values(), key=lambda a: (a.opened_at, a.kind, a.id))


def evaluate_traces(
    spark: SparkSession, paths: list[Path], settings: StreamingSettings
) -> dict[str, list[dict[str, Any]]]:
    """Run the pipeline to completion over each trace separately; the alerts each ends with."""
    for path in paths:
        check_readable(path)
    # The stateful stage's RocksDB state store reports to Spark's state store coordinator, which
    # the driver starts with its streaming query manager; a batch query alone never starts it,
    # and on Spark 4.2 every task then fails to load its state store ("Cannot find endpoint:
    # StateStoreCoordinator"). Asking for the manager starts it.
    spark.streams.active  # noqa: B018
    out: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        text = spark.read.format("text").load(str(path.absolute()))
        rows = changes(
            file_lines(text),
            lateness_ms=settings.lateness_ms,
            dedupe_horizon_ms=settings.dedupe_horizon_ms,
            final=True,
        ).collect()
        detected = int(time.time() * 1000)
        out[str(path)] = [
            dataclasses.asdict(StoredAlert.detected(a, detected)) for a in final_alerts(rows)
        ]
    return out
