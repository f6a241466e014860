"""Print how many error texts `rcompat explain` places: the corpus's development and held-out parts
(split by source, rcompat/explain/corpus.py), the second held-out set collected after the rules were
written, and the user-code errors that must never get `fail`; with --missed, the sources it misses.

    .venv/bin/python scripts/explain_rates.py [--missed]
"""
from __future__ import annotations

import argparse
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missed", action="store_true", help="list the sources of the texts not placed")
    args = ap.parse_args()
    from rcompat.explain.corpus import rates

    for name, rate in rates().items():
        print(f"{name:28} {rate}")
        if args.missed:
            for source in rate.missed:
                print(f"    missed: {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
