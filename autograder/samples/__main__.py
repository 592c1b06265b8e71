"""`python -m autograder.samples --install`: write the demo students into grading/submitted/."""

from . import main

raise SystemExit(main())
