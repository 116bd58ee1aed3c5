"""The rule engine of one cluster, in plain Python: event-time intake, route tables, alerts.

It imports no pyspark: the Spark job (``streaming.processor``) persists its state in Spark's
state store and feeds it each cluster's events; tests drive it directly.
"""

from streaming.engine.alerts import AlertBook
from streaming.engine.cluster import ClusterEngine
from streaming.engine.intake import Intake
from streaming.engine.runner import run_cluster, run_stream
from streaming.engine.stream import StreamEngine

__all__ = [
    "AlertBook",
    "ClusterEngine",
    "Intake",
    "StreamEngine",
    "run_cluster",
    "run_stream",
]
