"""``routewatch simulate``: write a scenario of the library, or a fleet, as a trace file."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from emitter.fleet import FleetSpec, estimate_fleet, generate_fleet
from emitter.scenarios import SCENARIOS
from emitter.trace import TraceWriter
from emitter.versions import RELEASES, release_named
from routewatch.errors import RoutewatchError

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``simulate`` to the ``routewatch`` command line."""
    parser = subparsers.add_parser(
        "simulate",
        help="write a scenario or a fleet as a JSON-lines trace",
        description="Run the RocketMQ route model and write its events as a trace "
        "(JSON lines; gzip when FILE ends in .gz).",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--list",
        action="store_true",
        help="print the scenarios, one per line: its name, then what it does",
    )
    what.add_argument("--scenario", metavar="NAME", help="the scenario to run")
    what.add_argument("--fleet", action="store_true", help="generate a healthy fleet's traffic")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--rocketmq",
        choices=list(RELEASES),
        default="4.9",
        help="with --scenario: the RocketMQ release line whose behaviour the model follows, "
        "and with --expected the alerts under it (default 4.9; docs/emitter.md says where 5 "
        "differs)",
    )
    parser.add_argument("--out", type=Path, metavar="FILE", help="trace file to write")
    parser.add_argument(
        "--expected",
        action="store_true",
        help="with --scenario: print the alerts a correct monitor ends with, as JSON lines",
    )
    fleet = parser.add_argument_group("fleet (with --fleet; defaults are the reference fleet)")
    defaults = FleetSpec()
    for name, help_text in FleetSpec.OPTIONS.items():
        fleet.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            type=type(getattr(defaults, name)),
            default=getattr(defaults, name),
            help=f"{help_text} (default {getattr(defaults, name)})",
        )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.list:
        width = max(map(len, SCENARIOS))
        for name, listed in SCENARIOS.items():
            print(f"{name:{width}}  {listed.summary}")
        return 0
    if args.expected:
        if args.scenario not in SCENARIOS:
            raise RoutewatchError("--expected needs --scenario NAME with a scenario of --list.")
        for alert in SCENARIOS[args.scenario].expected_under(release_named(args.rocketmq)):
            print(orjson.dumps(dataclasses.asdict(alert)).decode())
        return 0
    if args.out is None:
        raise RoutewatchError("--out FILE is required to write a trace; give the file to write.")
    started = time.monotonic()
    if args.scenario is not None:
        scenario = SCENARIOS.get(args.scenario)
        if scenario is None:
            raise RoutewatchError(
                f"there is no scenario named '{args.scenario}'; "
                "`routewatch simulate --list` prints their names."
            )
        with TraceWriter(args.out) as writer:
            scenario.run(args.seed, sink=writer.write, version=release_named(args.rocketmq))
        count = writer.count
    else:
        spec_args: dict[str, Any] = {name: getattr(args, name) for name in FleetSpec.OPTIONS}
        for name, value in spec_args.items():
            if value < 1:
                option = f"--{name.replace('_', '-')}"
                raise RoutewatchError(f"{option} must be at least 1, got {value}.")
        spec = FleetSpec(seed=args.seed, **spec_args)
        size = estimate_fleet(spec)
        gzip = " before gzip" if args.out.name.endswith(".gz") else ""
        print(
            f"writing about {size.events:,} events ({size.bytes / 1e6:,.0f} MB{gzip}) to "
            f"{args.out}; --duration and --send-rate scale it",
            file=sys.stderr,
            flush=True,
        )
        with TraceWriter(args.out) as writer:
            generate_fleet(spec, writer.write_line)
        count = writer.count
    elapsed = time.monotonic() - started
    print(f"wrote {count} events to {args.out} in {elapsed:.1f} s", file=sys.stderr)
    return 0
