"""python -m convt_op {build,demo,bench,bench-report}"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m convt_op", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the operator library now, showing progress")
    demo = sub.add_parser("demo", help="run an embedded decoder with and without convt, compare and time")
    demo.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    # The benchmark parses its own options (python -m convt_op bench --help lists them).
    sub.add_parser("bench", add_help=False, help="time convt against PyTorch on the benchmark suite (GPU)")
    sub.add_parser("bench-report", add_help=False,
                   help="summarize, merge and compare bench result folders (no GPU)")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command not in ("bench", "bench-report"):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")

    if args.command == "build":
        from . import _build

        path = _build.build(verbose=True)
        print(f"convt_op: library ready: {path}")
        return 0
    if args.command == "demo":
        from . import demo as demo_mod

        return demo_mod.main(device=args.device)
    if args.command == "bench":
        from . import bench

        return bench.main(rest)
    if args.command == "bench-report":
        from . import bench_report

        return bench_report.main(rest)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
