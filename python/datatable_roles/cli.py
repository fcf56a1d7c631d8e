"""Command line interface: ``datatable-roles``."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="datatable-roles",
        description="Per-viewer PostgreSQL logins for data tables.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    migrate = sub.add_parser("migrate", help="apply pending migrations")
    migrate.add_argument("conninfo", help="libpq conninfo of the metadata database")
    migrate.add_argument("--migrations", help="migrations directory (default: the package's)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "migrate":
        from .migrate import migrate

        applied = migrate(args.conninfo, args.migrations)
        print("\n".join(applied) if applied else "nothing to apply")
        return 0
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
