"""The course's machinery: two one-way pipelines over the same notebooks.

* publishing: solutions/ -> :mod:`autograder.release` -> exercises/ -> the website;
* grading: submissions -> :mod:`autograder.grade` -> gradebook -> feedback and reports.

Packages, bottom to top (each imports only those below it): :mod:`autograder.course` (paths, id,
release number); :mod:`autograder.nb` (notebook plumbing); :mod:`autograder.checks` (the reference,
the check framework, the harness shipped into kernels, one module of checks per chapter);
:mod:`autograder.release`; :mod:`autograder.grade`. :mod:`autograder.samples` (sample submissions)
builds on nb and checks.
"""
