"""Real services on free 127.0.0.1 ports, started and stopped by PID, for the tests and the
benchmarks (as PySpark ships ``pyspark.testing``): Apache Kafka with ZooKeeper, PostgreSQL,
Prometheus, RocketMQ NameServers and brokers, and routewatch's own processes.

Nothing in routewatch's production code imports this package (``tests/test_layout.py`` checks);
what needs pytest (fixtures, skipping) stays in ``tests/support``.
"""
