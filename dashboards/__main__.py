"""``python -m dashboards [--check]``: write the generated dashboard, or check it is current."""

from __future__ import annotations

import argparse
import sys

from dashboards import DASHBOARD_FILE
from dashboards.routewatch_dashboard import dashboard_json
from routewatch.cli import plain_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboards", description=plain_text(__doc__))
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the committed JSON differs from the code"
    )
    args = parser.parse_args(argv)
    generated = dashboard_json()
    if args.check:
        current = DASHBOARD_FILE.read_text() if DASHBOARD_FILE.exists() else ""
        if current != generated:
            print(
                f"{DASHBOARD_FILE} is not what dashboards/routewatch_dashboard.py generates: "
                "run `python -m dashboards` and commit the result.",
                file=sys.stderr,
            )
            return 1
        return 0
    DASHBOARD_FILE.write_text(generated)
    print(f"wrote {DASHBOARD_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
