"""The Spark Structured Streaming job: read events, build route tables, detect alerts."""

from streaming.schema import event_schema, spark_type
from streaming.session import spark_session

__all__ = ["event_schema", "spark_session", "spark_type"]
