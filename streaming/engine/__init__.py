"""The rule engine of one cluster, in plain Python: event-time intake, route tables, alerts.

It imports no pyspark: the Spark job (``streaming.processor``) persists its state in Spark's
state store and feeds it each cluster's events; tests drive it directly.
"""

from streaming.engine.alerts import Alert, AlertBook, alert_id
from streaming.engine.cluster import ClusterEngine, RouteChange
from streaming.engine.intake import Intake
from streaming.engine.runner import run_cluster, run_stream
from streaming.engine.stream import StreamEngine

__all__ = [
    "Alert",
    "AlertBook",
    "ClusterEngine",
    "Intake",
    "RouteChange",
    "StreamEngine",
    "alert_id",
    "run_cluster",
    "run_stream",
]
