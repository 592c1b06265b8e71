"""`python -m autograder.hub`: the trial hub (make hub), or --down to undo one (make hub-down)."""

import sys

from .cli import main

sys.exit(main())
