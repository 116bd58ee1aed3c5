"""Whether a checkpoint still holds clusters in the earlier state layout.

Earlier versions kept a cluster's state in ten state variables
(:data:`streaming.processor.LEGACY_STATE_VARIABLES`); this one keeps it in one map. The job
declares the earlier variables, and moves each cluster's state out of them at its first batch,
only while a checkpoint still needs it: declaring a state variable costs a task about 16 ms
every batch. The answer comes from Spark's state data sources at start, before the query runs.
"""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
from pyspark.sql import SparkSession

__all__ = ["holds_legacy_state"]

log = logging.getLogger("routewatch.stream")

# every cluster the earlier layout kept has these two; a cluster moved out has neither
_ALWAYS_KEPT = ("meta", "intake")


def holds_legacy_state(spark: SparkSession, checkpoint: Path) -> bool:
    """True when the checkpoint's stateful operator declares the earlier layout's variables
    and a cluster's state is still in them."""
    if not (checkpoint / "state").is_dir():
        return False  # a new checkpoint
    path = str(checkpoint)
    try:
        declared: set[str] = set()
        for row in spark.read.format("state-metadata").load(path).collect():
            properties = orjson.loads(row["operatorProperties"] or "{}")
            declared |= {v["stateName"] for v in properties.get("stateVariables", [])}
        return any(
            spark.read.format("statestore").option("stateVarName", name).load(path).limit(1).count()
            for name in _ALWAYS_KEPT
            if name in declared
        )
    except Exception as exc:  # (Spark raises several kinds: any means "unknown")
        # unknown: declaring the earlier variables too is always correct, only slower
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning(
            "could not read the state layout of the checkpoint %s (%s); this run declares the "
            "earlier layout's state variables too",
            checkpoint,
            first,
        )
        return True
