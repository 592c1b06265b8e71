"""Gradescope: the course's grader as a Gradescope autograder.

``python -m autograder.gradescope build A`` (``make gradescope ASSIGNMENT=A``) writes
``grading/gradescope/A.zip``: ``setup.sh`` and ``run_autograder`` at its root, the grading code
(``autograder/`` without the publishing and sample stages), the assignment's source notebook (it
holds the reference solutions) and release notebook, a pinned grading-only requirements file and
``gradescope.json`` (the assignment, the release stamp, the tests' visibility).

Gradescope unpacks the zip into ``$GRADESCOPE_ROOT/source`` (``/autograder/source``), runs
``setup.sh`` once, and per submission runs ``run_autograder``, which calls
``python -m autograder.gradescope run`` (:mod:`.runner`): it grades the one ``.ipynb`` in
``$GRADESCOPE_ROOT/submission`` with the same checks as ``make grade``
(:func:`autograder.grade.worker.grade`, verdict outside the kernel) and writes
``$GRADESCOPE_ROOT/results/results.json`` (:mod:`.results`).

The student's kernel runs in bubblewrap where :func:`autograder.grade.sandbox.probe` says it works;
otherwise (Gradescope's container: root, no user namespaces) as an unprivileged user who cannot
read the source nor write the results (:mod:`.isolation`); otherwise nothing runs (fail closed).

It sits beside :mod:`autograder.grade` (it uses grade; nothing of the course imports it).
"""
