"""The rule engine, in plain Python: event-time intake, route tables, alerts, and the state it
keeps between batches.

It imports no pyspark. One step function (:class:`~streaming.engine.step.Step`) takes a batch
of arrivals and the stream's state entries (:mod:`streaming.engine.entries`: get, put, remove by
name; :mod:`streaming.engine.layout` says what lives where) and returns the changes; the Spark
job (``streaming.stages.track``) calls it over Spark's ``MapState``, the tests and in-memory runs
(:mod:`streaming.engine.runner`) over a dict.
"""

from streaming.engine.alerts import AlertBook
from streaming.engine.cluster import ClusterEngine
from streaming.engine.entries import Entries, MemoryEntries
from streaming.engine.intake import Intake
from streaming.engine.runner import run_cluster, run_stream
from streaming.engine.step import Step
from streaming.engine.stream import StreamEngine

__all__ = [
    "AlertBook",
    "ClusterEngine",
    "Entries",
    "Intake",
    "MemoryEntries",
    "Step",
    "StreamEngine",
    "run_cluster",
    "run_stream",
]
