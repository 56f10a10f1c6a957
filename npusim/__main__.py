"""``python -m npusim <command>``: small tools that come with the package."""
from __future__ import annotations

import argparse
import sys


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m npusim",
                                     description="Tools that come with npusim.")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    sub.add_parser("info", help="print versions, available devices and thread counts",
                   description="Print the npusim, Python, NumPy and ml_dtypes versions, the available "
                               "devices and the thread counts.")
    sub.add_parser("demo", help="train a small transformer on the npu (see 'demo --help')", add_help=False)
    sub.add_parser("run", help="run an unmodified PyTorch program on npusim (see 'run --help')", add_help=False)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "demo":
        from .demo import main as demo_main
        return demo_main(argv[1:])
    if argv and argv[0] == "run":
        from .run_program import main as run_main
        return run_main(argv[1:])
    parser = _build_parser()
    args = parser.parse_args(argv)  # an unknown command exits with status 2 and says why
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "info":
        from ._info import info_text
        print(info_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
