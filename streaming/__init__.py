"""The Spark Structured Streaming job: read events, build route tables, detect alerts."""

from streaming.session import spark_session

__all__ = ["spark_session"]
