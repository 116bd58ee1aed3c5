"""Where the job's lines come from: the spool directory (``spool``) or a Kafka topic
(``kafka``), each as ``(value, origin)`` rows for :mod:`streaming.pipeline`."""
