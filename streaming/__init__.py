"""The Spark Structured Streaming job: read events, build route tables, detect alerts.

``engine/`` is plain Python (no pyspark); ``stages/``, ``sources/``, ``job/`` and ``spark/`` are
the Spark side (docs/development.md has the layout)."""
