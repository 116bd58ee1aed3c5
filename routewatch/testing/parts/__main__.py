"""``python -m routewatch.testing.parts [PART ...]``: resolve the test parts (all by default)
from Maven Central into ``.cache/parts/``, printing each one's folder; exit 1 with one sentence
when one cannot be had."""

from __future__ import annotations

import sys

from routewatch.testing.parts import PARTS, PartMissingError, install


def main(argv: list[str]) -> int:
    names = argv or list(PARTS)
    unknown = sorted(set(names) - set(PARTS))
    if unknown:
        print(
            f"unknown part(s) {', '.join(unknown)}: name some of {', '.join(PARTS)}.",
            file=sys.stderr,
        )
        return 2
    for name in names:
        try:
            folder = install(name, log=lambda line: print(f"==> {line}", flush=True))
        except PartMissingError as exc:
            print(f"routewatch install: {exc}", file=sys.stderr)
            return 1
        print(f"==> {name}: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
