"""Gradescope: the course's grader as a Gradescope autograder.

``python -m autograder.gradescope build A`` (``make gradescope ASSIGNMENT=A``) writes
``grading/gradescope/A.zip`` (:mod:`.build`): ``setup.sh`` and ``run_autograder`` at its root, the
grading code the import graph of the runner and of the assignment's own checks reaches
(:mod:`.contents`: no other chapter's checks, no cluster, benchmark or builder code), the
assignment's source notebook (it holds the reference solutions) and release notebook, a pinned
grading-only requirements file and ``gradescope.json`` (the assignment, the release stamp, the
tests' visibility, every assignment's title and grade ids).

Gradescope unpacks the zip into ``$GRADESCOPE_ROOT/source`` (``/autograder/source``), runs
``setup.sh`` once (a venv from the zip's requirements alone), and per submission runs
``run_autograder``, which calls ``python -m autograder.gradescope.runner`` (:mod:`.runner`): it
grades the one ``.ipynb`` in ``$GRADESCOPE_ROOT/submission`` with the same checks as ``make
grade`` (:func:`autograder.grade.worker.grade`, verdict outside the kernel) and writes
``$GRADESCOPE_ROOT/results/results.json`` (:mod:`.results`); another assignment's notebook is
named and not run (:mod:`.identify`). ``make gradescope-test`` (:mod:`.local`, :mod:`.trial`)
does all of it on this machine with the built zip.

The student's kernel runs in bubblewrap where :func:`autograder.grade.sandbox.probe` says it works;
otherwise (Gradescope's container: root, no user namespaces) as an unprivileged user who cannot
read the source nor write the results (:mod:`.isolation`); otherwise nothing runs (fail closed).

It sits beside :mod:`autograder.grade` (it uses grade; nothing of the course imports it).
"""
