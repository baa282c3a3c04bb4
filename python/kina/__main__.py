"""`python -m kina info model.so`: the module, target and the signature of
every function of a kinac shared library, read from its embedded manifest."""

import argparse
import sys

from ._module import load


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kina")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print the functions of a library")
    info.add_argument("library", help="a library from kinac --emit=shared")
    args = parser.parse_args(argv)
    try:
        m = load(args.library)
    except (OSError, ValueError) as e:
        print(f"python -m kina: {e}", file=sys.stderr)
        return 1
    print(f"module {m.name} (target {m.target}, "
          f"{m.manifest.get('generator', '?')})")
    for fn in m.functions.values():
        print(f"  {fn.signature()}    [{fn.symbol}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
