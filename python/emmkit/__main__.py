"""python3 -m emmkit certify MODULE[:ATTR] [--capabilities LIST] [emm-certify options...]

Prints emm-certify's console output and exits with its status."""
import sys

from . import certify


def main(argv):
    if len(argv) < 2 or argv[0] != "certify":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    target, rest = argv[1], argv[2:]
    capabilities = None
    if "--capabilities" in rest:
        at = rest.index("--capabilities")
        if at + 1 >= len(rest):
            print("--capabilities needs a value", file=sys.stderr)
            return 2
        capabilities = rest[at + 1]
        rest = rest[:at] + rest[at + 2:]
    run = certify(target, capabilities=capabilities, extra_args=rest)
    sys.stdout.write(run.console)
    return run.status


def entry_point():
    """The `emmkit` command a pip install makes (same as python3 -m emmkit)."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
