"""``routewatch evaluate``, ``routewatch stream`` and ``routewatch reset``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TextIO

import orjson

from routewatch.settings import load
from streaming.settings import StreamingSettings

__all__ = ["configure_logging", "register_evaluate", "register_reset", "register_stream"]


def register_evaluate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="run traces to completion and print the alerts each ends with",
        description="Run each trace to completion separately (the default), or all of them as "
        "one stream (--one-stream), and print the alerts each ends with, open and resolved, "
        "with their remedies, how many of its lines were events, and each bad line by file "
        "and line (the first 20, then a count). The local engine (the default) runs the job's "
        "own step in this process, in seconds; --engine spark runs the Spark job, the same "
        "stages as routewatch stream; both give the same alerts. Fails (status 2) when a trace "
        "holds no event at all.",
    )
    parser.add_argument(
        "traces",
        nargs="+",
        type=Path,
        metavar="TRACE",
        help="JSON-lines trace (.jsonl or .jsonl.gz); with --one-stream also a directory",
    )
    parser.add_argument(
        "--engine",
        choices=["local", "spark"],
        default="local",
        help="local: the job's step in this process (default); spark: the Spark job",
    )
    parser.add_argument(
        "--one-stream",
        action="store_true",
        help="read every TRACE as one stream, in the order the job reads a spool (by "
        "modification time, then path), e.g. the files of a spool directory; the result is "
        "named 'stream' (default: each trace on its own)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print one JSON object: trace path -> list of alerts"
    )
    output.add_argument(
        "--jsonl", action="store_true", help="print one alert per line, each with its 'trace'"
    )
    parser.set_defaults(handler=_evaluate)


def register_stream(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stream",
        help="run the long-running job: events -> route tables and alerts in the store",
        description="Run the streaming job until Ctrl-C or SIGTERM. Source, trigger interval, "
        "checkpoints and store come from ROUTEWATCH_* settings. It prints each alert as it "
        "opens and resolves, and a warning in its own words when it falls behind its input; "
        "Spark's and the JVM's lines, and the job's own log, go to the log file it names "
        "(<data dir>/stream.log by default).",
    )
    parser.add_argument(
        "--source",
        choices=["spool", "kafka"],
        default="spool",
        help="where events come from: the spool directory (default) or the Kafka topic "
        "(ROUTEWATCH_KAFKA_*)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="also a line per batch")
    parser.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help="the log file for Spark's, the JVM's and the job's own log lines (appended; "
        "default: <data dir>/stream.log)",
    )
    parser.add_argument(
        "--spark-output",
        action="store_true",
        help="leave Spark's, the JVM's and the job's log lines on this terminal instead",
    )
    parser.set_defaults(handler=_stream)


def register_reset(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "reset",
        help="delete the job's checkpoints and the store, so that it starts over",
        description="Reset the streaming job: delete the checkpoint of every source (spool and "
        "kafka) and the store they share, so that the next routewatch stream starts from the "
        "first input its source still holds, with a new store. Stop every routewatch stream "
        "first. The alert history, acknowledgements and silences are lost; the spool's files "
        "stay unless --spool, and the Kafka topic stays. Without --yes, prints what it would "
        "delete (status 0, or 2 while a job may still run).",
    )
    parser.add_argument("--yes", action="store_true", help="delete them (default: only list)")
    parser.add_argument(
        "--spool",
        action="store_true",
        help="also delete the spool's files and its mark of what it holds (replayed traces, or "
        "a live cluster's events), e.g. to watch a live cluster from a directory a replay wrote",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="reset even though a job reported to the store in the last 30 s (when it is "
        "known to have stopped)",
    )
    parser.set_defaults(handler=_reset)


def _reset(args: argparse.Namespace) -> int:
    settings = load(StreamingSettings)
    from streaming.job.reset import RESET_COMMAND, reset_job, running_job, what_reset_deletes

    command = RESET_COMMAND + (" --spool" if args.spool else "")
    if not args.yes:
        listed = what_reset_deletes(settings, spool=args.spool)
        if not listed:
            print("nothing to delete: the job has no checkpoint and no store yet")
            return 0
        print("routewatch reset would delete:")
        for what in listed:
            print(f"  {what}")
        running = None if args.force else running_job(settings)
        if running is not None:
            print(
                f"routewatch: nothing was deleted: {running}: stop every routewatch stream, "
                f"then run {command} to delete these.",
                file=sys.stderr,
            )
            return 2
        print(f"nothing was deleted: run {command} to delete these.")
        return 0
    deleted = reset_job(settings, force=args.force, spool=args.spool)
    for what in deleted:
        print(f"deleted {what}")
    if not deleted:
        print("nothing to delete: the job has no checkpoint and no store yet")
    return 0


ENGINES = {
    "local": "engine local: the job's step in this process",
    "spark": "engine spark: the Spark job's stages",
}


def _evaluate(args: argparse.Namespace) -> int:
    settings = load(StreamingSettings)
    from routewatch.terminal import alert_line, remedy_line
    from streaming.job.evaluate import check_readable, evaluate_local, evaluate_runs

    for path in args.traces:
        if not (args.one_stream and path.is_dir()):
            check_readable(path)  # before starting anything
    if args.engine == "local":
        results = evaluate_local(list(args.traces), settings, args.one_stream)
    else:
        from streaming.spark.session import spark_session, stop_session

        master, conf = settings.session_master(), settings.spark_conf()
        spark = spark_session(master, "routewatch-evaluate", conf)
        spark.sparkContext.setLogLevel("ERROR")
        try:
            results = evaluate_runs(spark, list(args.traces), settings, args.one_stream)
        finally:
            stop_session(spark)
    if args.json:
        alerts = {name: run.alerts for name, run in results.items()}
        sys.stdout.write(orjson.dumps(alerts, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif args.jsonl:
        for name, run in results.items():
            for alert in run.alerts:
                sys.stdout.write(orjson.dumps({"trace": name, **alert}).decode() + "\n")
    else:
        print(f"routewatch evaluate ({ENGINES[args.engine]})")
        for name, run in results.items():
            print(f"{name}: {len(run.alerts)} alert(s), from {run.summary()}")
            for line in run.bad_lines:
                print(f"  bad input: {line}")
            more = sum(run.bad.values()) - len(run.bad_lines)
            if more > 0:
                print(f"  bad input: {more} more line(s)")
            for a in run.alerts:
                print(alert_line(a["state"], a))
                remedy = remedy_line(a)
                if remedy is not None:
                    print(remedy)
    if args.json or args.jsonl:
        print(f"routewatch evaluate: {ENGINES[args.engine]}", file=sys.stderr)
    empty = [name for name, run in results.items() if not run.events]
    for name in empty:
        print(
            f"routewatch: {name} holds no event ({run_words(results[name].summary())}): is it "
            "a trace of the event contract?",
            file=sys.stderr,
        )
    return 2 if empty else 0


def run_words(summary: str) -> str:
    """``0 event(s), 3 line(s) of bad input (...)`` without its first clause."""
    return summary.split(", ", 1)[1] if ", " in summary else "no line at all"


# py4j logs at INFO every call the JVM makes into Python ("Received command c on object id p0":
# Spark's listener, once per batch and every ~10 s while the query is idle) and its connections
# opening and closing: its own plumbing, not the operator's business. Its warnings still show.
QUIET_LOGGERS = ("py4j",)


def configure_logging(
    terminal: TextIO | None = None, *, verbose: bool = False
) -> logging.Handler | None:
    """The stream job's log: routewatch's lines at INFO, with a timestamp and the logger, to
    standard error (the log file, when routed); and routewatch's warnings — with ``verbose``,
    its INFO lines too — to ``terminal``, in routewatch's words: the handler that writes
    there, to remove before the terminal closes."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    if terminal is not None:
        said = logging.StreamHandler(terminal)
        said.setLevel(logging.INFO if verbose else logging.WARNING)
        said.setFormatter(logging.Formatter("routewatch: %(message)s"))
        logging.getLogger("routewatch").addHandler(said)
        return said
    return None


def _stream(args: argparse.Namespace) -> int:
    settings = load(StreamingSettings)
    from routewatch.store.backend import locate
    from streaming.job.console import Console, routed_output
    from streaming.job.stream import run_stream

    log = None if args.spark_output else (args.log or settings.data_dir / "stream.log")
    with routed_output(log) as terminal:
        said = configure_logging(None if log is None else terminal, verbose=args.verbose)
        source = settings.spool_dir if args.source == "spool" else "the Kafka topic"
        print(
            f"routewatch stream: {source} -> the store at {locate(settings.store_url).where}"
            + (f"; Spark's and the job's log: {log}" if log is not None else "")
            + ". Alerts follow as they open and resolve; Ctrl-C stops it.",
            file=terminal,
            flush=True,
        )
        console = Console(
            terminal, trigger_ms=int(settings.trigger_interval_s * 1000), verbose=args.verbose
        )
        try:
            status = run_stream(settings, args.source, console)
        finally:  # (the terminal closes with routed_output: nothing may log to it after)
            if said is not None:
                logging.getLogger("routewatch").removeHandler(said)
        print("routewatch stream: stopped.", file=terminal, flush=True)
        return status
