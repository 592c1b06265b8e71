"""`make hub`: the course on a real JupyterHub, for a small class on this machine (a trial).

An instructor and N students are real Unix users with homes of their own, created by the command
and removed again when it stops. JupyterHub (pinned, from PyPI) runs each user's server *as that
user* (``LocalProcessSpawner``), behind configurable-http-proxy (pinned, from npm). Students log
in with a shared password (``SharedPasswordAuthenticator``, a trial's authenticator), fetch and
submit in JupyterLab's Assignments tab through nbgrader's exchange; the instructor releases,
collects and releases feedback in formgrader and grades with ``make grade``.

* :mod:`.trial`    the folders, users and settings of one trial, and its record (what to undo);
* :mod:`.users`    Unix users, their homes and their processes;
* :mod:`.env`      the environment students' servers run in: a copy of the course's venv (and
                   of its Python) outside any folder students cannot reach, nothing of the course;
* :mod:`.access`   who may read what: the course closed to students, the grading folder shared
                   with the instructor, nbgrader's exchange, each role's Jupyter configuration;
* :mod:`.proxy`    configurable-http-proxy from the committed npm lock file;
* :mod:`.run`      the foreground process: start, print where to log in, stop everything it
                   started on Ctrl-C or SIGTERM; ``jupyterhub_config.py`` is JupyterHub's config.
"""
