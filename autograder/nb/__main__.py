"""``python -m autograder.nb normalize NOTEBOOK...``: strip outputs, write byte-stably."""

import sys

from .io import read, strip_outputs, write


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "normalize":
        print("usage: python -m autograder.nb normalize NOTEBOOK...", file=sys.stderr)
        return 2
    for path in argv[1:]:
        nb = strip_outputs(read(path))
        nb["nbformat"], nb["nbformat_minor"] = 4, 5
        write(nb, path)
        print("normalized", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
