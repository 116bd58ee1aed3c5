"""Smoke test of the harness: a row written to the real PostgreSQL server survives its restart."""

from __future__ import annotations

import psycopg
import pytest

from routewatch.testing.postgres import Postgres


def test_a_row_survives_a_restart_of_the_server(postgres: Postgres) -> None:
    url = postgres.create_database("harness_smoke")
    assert url == f"postgresql://routewatch@127.0.0.1:{postgres.port}/harness_smoke"
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE brokers (name text PRIMARY KEY, routes integer NOT NULL)")
        conn.execute("INSERT INTO brokers VALUES (%s, %s)", ("broker-a", 3))
    pid = postgres.pid

    # A session left open does not hold the restart up (a fast shutdown ends it)...
    with psycopg.connect(url, autocommit=True) as held:
        held.execute("SELECT 1")
        postgres.restart()
        # ...and the client sees its connection gone, as it would in production.
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")

    assert postgres.pid != pid
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT name, routes FROM brokers").fetchall()
    assert rows == [("broker-a", 3)]
