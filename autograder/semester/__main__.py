"""`python -m autograder.semester`: a whole term built, graded, exported and reported."""

from .cli import main

raise SystemExit(main())
