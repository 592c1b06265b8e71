"""Submissions from an LMS's download into nbgrader's layout (``make collect``).

``python -m autograder.collect --lms canvas --zip FILE --roster FILE --assignment A`` reads
Canvas's "Download Submissions" zip (or Moodle's "Download all submissions") and writes each
student's notebook to ``grading/submitted/<id>/<A>/<A>.ipynb``, the id found through the LMS's
own id in the file name and the roster the instructor exported. It sits beside
:mod:`autograder.export` (whose roster readers it uses) and is imported by no grading stage.
"""
