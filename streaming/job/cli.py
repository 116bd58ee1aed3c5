"""``routewatch evaluate`` and ``routewatch stream``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import orjson

from routewatch.settings import load
from streaming.settings import StreamingSettings

__all__ = ["configure_logging", "register_evaluate", "register_stream"]


def register_evaluate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="run the pipeline over traces and print the alerts each ends with",
        description="Run the streaming pipeline to completion over each trace separately (one "
        "Spark session for all) and print the alerts each trace ends with, open and resolved.",
    )
    parser.add_argument(
        "traces",
        nargs="+",
        type=Path,
        metavar="TRACE",
        help="JSON-lines trace (.jsonl or .jsonl.gz)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object: trace path -> list of alerts"
    )
    parser.set_defaults(handler=_evaluate)


def register_stream(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stream",
        help="run the long-running job: events -> route tables and alerts in the store",
        description="Run the streaming job until Ctrl-C or SIGTERM. Source, trigger interval, "
        "checkpoints and store come from ROUTEWATCH_* settings.",
    )
    parser.add_argument(
        "--source",
        choices=["spool", "kafka"],
        default="spool",
        help="where events come from: the spool directory (default) or the Kafka topic "
        "(ROUTEWATCH_KAFKA_*)",
    )
    parser.set_defaults(handler=_stream)


def _evaluate(args: argparse.Namespace) -> int:
    settings = load(StreamingSettings)
    from streaming.job.evaluate import check_readable, evaluate_traces
    from streaming.spark.session import spark_session, stop_session

    for path in args.traces:
        check_readable(path)  # before starting Spark

    spark = spark_session(settings.session_master(), "routewatch-evaluate", settings.spark_conf())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        results = evaluate_traces(spark, list(args.traces), settings)
    finally:
        stop_session(spark)
    if args.json:
        sys.stdout.write(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    for path, alerts in results.items():
        print(f"{path}: {len(alerts)} alert(s)")
        for a in alerts:
            where = a["topic"] or f"{a['broker']}/{a['broker_id']}"
            cause = f" cause={a['cause']}" if a["cause"] else ""
            print(f"  {a['state']:8s} {a['severity']:8s} {a['kind']:18s} {where}{cause}")
    return 0


# py4j logs at INFO every call the JVM makes into Python ("Received command c on object id p0":
# Spark's listener, once per batch and every ~10 s while the query is idle) and its connections
# opening and closing: its own plumbing, not the operator's business. Its warnings still show.
QUIET_LOGGERS = ("py4j",)


def configure_logging() -> None:
    """The stream job's log: routewatch's lines at INFO, with a timestamp and the logger."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _stream(args: argparse.Namespace) -> int:
    settings = load(StreamingSettings)
    configure_logging()
    from streaming.job.stream import run_stream

    return run_stream(settings, args.source)
