"""Grading: submissions -> sandboxed kernels -> verdicts outside the kernel -> gradebook, reports
and feedback. ``python -m autograder.grade`` (`make grade`) is the command; see :mod:`.cli`.

Modules, from the command down: cli (the command), pool (worker processes), worker (one
submission), run (its kernel and time budget), exchange (cases in, plain outcomes out), sandbox
(bubblewrap + limits), kernels (scratch folders, the spare kernel), assignment (what the source
notebook says), submission (reading a notebook), results (typed results), gradebook, report,
feedback and graded (what the student gets back), nbgrader_plugins (plain nbgrader, leak-free),
bench (the grading benchmark); on a Dask cluster (``--scheduler``): cluster (the client),
cluster_worker (the worker plugin and task), fingerprint (the course a worker runs), address
(which scheduler addresses are accepted).
"""
