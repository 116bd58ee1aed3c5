"""``routewatch sandbox``: a real RocketMQ on this machine to try routewatch on — NameServers and
brokers on 127.0.0.1, a plain producer to send with, ``mqadmin``, and the catalogue's failures
made to happen for real (docs/sandbox.md).

It is the test harness's cluster (:mod:`routewatch.testing.rocketmq`) exposed, not a fork of it:
the only production code allowed to import the harness (``tests/test_layout.py``).
"""
