"""``python -m autograder.hub [--dir DIR] [--ip IP] [--port N] [--students N] ...`` (``make hub``).

Runs in the foreground until Ctrl-C or SIGTERM, then stops everything it started. ``--down``
undoes a trial that was killed outright (``make hub-down``). Exit status 0 when it started and
stopped cleanly, 1 when it failed (the reason is printed) or could not undo something (named),
2 when it cannot start here (not root, a user name taken, the port in use).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..course import ROOT
from .run import down
from .run import main as run
from .trial import Trial


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m autograder.hub", description=__doc__)
    p.add_argument(
        "--dir",
        type=Path,
        default=Path("/srv/embedding-tables-hub"),
        help="the hub's folder (default /srv/embedding-tables-hub)",
    )
    p.add_argument("--ip", default="127.0.0.1", help="where to listen (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="the port to log in at (default 8000)")
    p.add_argument("--instructor", default="instructor", help="the instructor's user name")
    p.add_argument(
        "--student",
        default="student",
        help="the students' user names: this, then 1..N (default student)",
    )
    p.add_argument("--students", type=int, default=3, help="how many students (default 3)")
    p.add_argument(
        "--grading-dir",
        type=Path,
        default=ROOT / "grading-hub",
        help="the grading folder (default grading-hub/)",
    )
    p.add_argument("--down", action="store_true", help="undo a trial that was killed outright")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.students < 1:
        print("error: --students must be at least 1")
        return 2
    trial = Trial(
        home=args.dir,
        ip=args.ip,
        port=args.port,
        instructor=args.instructor,
        students=[f"{args.student}{i}" for i in range(1, args.students + 1)],
        grading=args.grading_dir,
    )
    return down(trial) if args.down else run(trial)
