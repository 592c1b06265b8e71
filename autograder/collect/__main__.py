"""`python -m autograder.collect`: an LMS's submissions zip into grading/submitted/."""

import sys

from .cli import main

sys.exit(main())
