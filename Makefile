# The front door. `make book` and `make test` are all a newcomer needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# nbgrader shells out to `alembic` when it creates a gradebook: the venv's bin must come first.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PYTHONDONTWRITEBYTECODE := 1

JOBS ?= $(shell nproc)
ASSIGNMENT ?=
# GRADING=DIR: the grading folder of every grading command (grade, collect, export, solutions,
# gradescope, demo, and any later one such as a class report): submissions, gradebook, feedback.
# Default grading/ (gitignored). `make demo` grades into grading-demo/ unless GRADING is given.
GRADING ?= grading
DEMO_GRADING := $(if $(filter command line environment,$(origin GRADING)),$(GRADING),grading-demo)
# nbgrader started by these commands (and nbgrader_config.py) use the same folder.
ifneq ($(filter command line environment,$(origin GRADING)),)
export COURSE_GRADING_DIR = $(abspath $(GRADING))
endif
# NO_SANDBOX=1: grade without bubblewrap (an explicit opt-out; reports and feedback say so).
NO_SANDBOX ?=
# SCHEDULER=tcp://HOST:PORT (private network) or tls://HOST:PORT: grade on a Dask cluster whose
# workers were started with `make worker SCHEDULER=...` (README: grading on a cluster).
SCHEDULER ?=
WORKERS ?= $(shell nproc)
GRADE_FLAGS = $(if $(SCHEDULER),--scheduler $(SCHEDULER),--jobs $(JOBS)) $(if $(filter 1,$(NO_SANDBOX)),--no-sandbox,)
PORT ?= 8888
# make hub: the course on a real JupyterHub, for a small class on this machine (a trial; as root).
# It listens on HUB_IP:HUB_PORT and keeps its state, the users' environment and nbgrader's
# exchange in HUB_DIR; HUB_INSTRUCTOR and HUB_STUDENT1..N are the Unix users it makes (and removes).
# Its grading folder is grading-hub/ unless GRADING is given (README: A class on JupyterHub).
HUB_DIR ?= /srv/embedding-tables-hub
HUB_IP ?= 127.0.0.1
HUB_PORT ?= 8000
HUB_INSTRUCTOR ?= instructor
HUB_STUDENT ?= student
HUB_STUDENTS ?= 3
HUB_GRADING := $(if $(filter command line environment,$(origin GRADING)),$(GRADING),grading-hub)
HUB_FLAGS = --dir "$(HUB_DIR)" --ip $(HUB_IP) --port $(HUB_PORT) --instructor $(HUB_INSTRUCTOR) \
  --student $(HUB_STUDENT) --students $(HUB_STUDENTS) --grading-dir "$(HUB_GRADING)"

.PHONY: venv book test lint format release configure lab hub hub-down grade report worker collect export demo semester solutions gradescope gradescope-test screenshots student-repo vendor-mathjax clean help

help:
	@echo "make book        build the website into _build/html"
	@echo "make test        run every test (sets up .venv first)"
	@echo "make lab         JupyterLab on your own copy of the exercises (workspace/)"
	@echo "make release     regenerate exercises/ from solutions/ and book/*.ipynb from the pages"
	@echo "make hub         the course on a trial JupyterHub at 127.0.0.1:8000, as root (HUB_PORT=..., HUB_STUDENTS=N)"
	@echo "make hub-down    undo a trial hub that was killed outright (its users, homes and modes)"
	@echo "make collect     an LMS's submissions zip into grading/submitted/ (LMS=canvas|moodle ZIP=FILE ROSTER=FILE ASSIGNMENT=A)"
	@echo "make grade       grade grading/submitted/ (ASSIGNMENT=..., JOBS=N, SCHEDULER=..., NO_SANDBOX=1)"
	@echo "make report      the class report after make grade: grading/report/index.html, CSVs, similarity"
	@echo "make worker      a Dask grading worker for make grade SCHEDULER=... (WORKERS=N, NO_SANDBOX=1)"
	@echo "make export      grades into the LMS's import file (LMS=canvas|moodle ROSTER=FILE [MAP=FILE])"
	@echo "make demo        sample submissions graded into grading-demo/: the whole flow at once"
	@echo "                 (every grading command takes GRADING=DIR, default grading/)"
	@echo "make semester    a whole term: STUDENTS=200 built, collected, graded, exported, reported"
	@echo "                 into semester/ (SEMESTER=DIR, ASSIGNMENT=..., JOBS=N or SCHEDULER=...)"
	@echo "make solutions   release the solutions after the deadline (grading/released_solutions)"
	@echo "make gradescope  a Gradescope autograder: grading/gradescope/ASSIGNMENT.zip (holds the solutions!)"
	@echo "make gradescope-test  that zip graded here as on Gradescope (ASSIGNMENT=..., NOTEBOOK=...)"
	@echo "make screenshots desktop and phone screenshots of every chapter under _build/screenshots"
	@echo "make configure   the launch buttons' repository and hub (REPO=https://github.com/ORG/REPO HUB=https://HUB)"
	@echo "make student-repo  the student-facing copy (book + exercises, no solutions) in student-repo/"
	@echo "make vendor-mathjax  re-fetch the pinned MathJax the website serves itself (needs npm)"
	@echo "make clean       remove build outputs (keeps .venv, workspace/ and grading/)"

# The venv is rebuilt when requirements.txt or pyproject.toml change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r requirements.txt
	$(VENV)/bin/python -m pip install -q --no-deps -e .
	@touch $@

venv: $(STAMP)

book: $(STAMP)
	python book/_ext/prerun.py || echo "prerun failed: jupyter-book executes the pages itself, one at a time"
	jupyter-book build . --builder html -W --keep-going
	@echo "website: $(CURDIR)/_build/html/index.html"

test: $(STAMP)
	bash tests/system_deps.sh
	bash tests/run_all.sh

lint: $(STAMP)
	ruff check .
	ruff format --check .

format: $(STAMP)
	ruff check --fix .
	ruff format .

release: $(STAMP)
	python -m autograder.release

# A student's own copy: made once, never overwritten by `make release` or `git pull`.
# As root (a container, CI) jupyter refuses to start without --allow-root.
lab: $(STAMP)
	@if [ ! -d workspace ]; then cp -r exercises workspace && echo "created workspace/ from exercises/"; \
	 else echo "workspace/ exists: your work is kept (delete it to start over)"; fi
	jupyter lab --notebook-dir=workspace --port=$(PORT) --no-browser $(if $(filter 0,$(shell id -u)),--allow-root,)

# In the foreground until Ctrl-C or SIGTERM, which stop everything it started and remove its users.
hub: $(STAMP)
	python -m autograder.hub $(HUB_FLAGS)

hub-down: $(STAMP)
	python -m autograder.hub $(HUB_FLAGS) --down

grade: $(STAMP)
	python -m autograder.grade --grading-dir "$(GRADING)" $(GRADE_FLAGS) $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT),)

# The instructor's view of the class, from what make grade recorded: $(GRADING)/report/index.html
# (self-contained, offline), its numbers as CSV and similarity.csv. SITE: the website the mistakes
# link to (default this checkout's _build/html; e.g. the course's published URL).
SITE ?=
report: $(STAMP)
	python -m autograder.report --grading-dir "$(GRADING)" $(if $(SITE),--site "$(SITE)",)

# One grading worker process per core (one thread each), from the course's root, in its venv.
# The preload refuses to serve when the sandbox cannot start, unless NO_SANDBOX=1.
worker: $(STAMP)
	@test -n "$(SCHEDULER)" || { echo "usage: make worker SCHEDULER=tcp://HOST:PORT (or tls://...)"; exit 2; }
	$(if $(filter 1,$(NO_SANDBOX)),COURSE_GRADE_NO_SANDBOX=1,) $(VENV)/bin/dask worker $(SCHEDULER) \
	  --nthreads 1 --nworkers $(WORKERS) --preload autograder.grade.cluster_worker

# An LMS's submissions download into $(GRADING)/submitted/<id>/<A>/<A>.ipynb. ZIP: Canvas's
# "Download Submissions" (or Moodle's "Download all submissions"); ROSTER: Canvas's gradebook
# export (Moodle: the assignment's grading worksheet), which turns the LMS's ids into logins.
LMS ?=
ROSTER ?=
ZIP ?=
MAP ?=
collect: $(STAMP)
	@if [ -z "$(LMS)" ] || [ -z "$(ZIP)" ] || [ -z "$(ROSTER)" ] || [ -z "$(ASSIGNMENT)" ]; then \
	 echo "usage: make collect LMS=canvas|moodle ZIP=FILE ROSTER=FILE ASSIGNMENT=A [GRADING=DIR]"; exit 2; fi
	python -m autograder.collect --lms "$(LMS)" --zip "$(ZIP)" --roster "$(ROSTER)" --assignment "$(ASSIGNMENT)" --grading-dir "$(GRADING)"

# The LMS's own grade-import CSV, filled from the gradebook: $(GRADING)/export/canvas.csv or
# moodle.csv. ROSTER is the LMS's grade export; MAP an optional CSV "nbgrader id, LMS login";
# ASSIGNMENT (space-separated) limits it to some assignments; EXPORT_FLAGS passes --clear-missing,
# --set-points-possible, --scale or --scale-to N (README: Grades into Canvas or Moodle).
EXPORT_FLAGS ?=
export: $(STAMP)
	@if [ -z "$(LMS)" ] || [ -z "$(ROSTER)" ]; then \
	 echo "usage: make export LMS=canvas|moodle ROSTER=FILE [MAP=FILE] [ASSIGNMENT=A] [EXPORT_FLAGS=...]"; exit 2; fi
	python -m autograder.export --lms "$(LMS)" --roster "$(ROSTER)" --grading-dir "$(GRADING)" $(if $(MAP),--map "$(MAP)" ,)$(foreach a,$(ASSIGNMENT),--assignment $(a)) $(EXPORT_FLAGS)

# A whole term at once in $(SEMESTER)/ (gitignored; never grading/): STUDENTS students' work built
# from the samples, collected from Canvas downloads, graded (JOBS=N, or SCHEDULER=...), exported to
# Canvas and Moodle, reported; prints the wall time and notebooks per second (README: A semester).
STUDENTS ?= 200
SEMESTER ?= semester
semester: export COURSE_GRADING_DIR = $(abspath $(SEMESTER))
semester: $(STAMP)
	python -m autograder.semester --students $(STUDENTS) --semester-dir "$(SEMESTER)" $(GRADE_FLAGS) $(foreach a,$(ASSIGNMENT),--assignment $(a))

# The demo grades into its own folder (grading-demo/, gitignored), never the term's grading/.
demo: export COURSE_GRADING_DIR = $(abspath $(DEMO_GRADING))
demo: $(STAMP)
	python -m autograder.samples --install --grading-dir "$(DEMO_GRADING)" $(ASSIGNMENT)
	python -m autograder.grade --grading-dir "$(DEMO_GRADING)" $(GRADE_FLAGS) $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT),)

solutions: $(STAMP)
	python -m autograder.release --solutions --grading-dir "$(GRADING)"

# The zip holds the reference solutions: upload it to Gradescope, never publish it.
# GS_VISIBILITY: when students see each test (visible, after_due_date, after_published, hidden).
GS_VISIBILITY ?= visible
gradescope: $(STAMP)
	@test -n "$(ASSIGNMENT)" || { echo "usage: make gradescope ASSIGNMENT=02_sparse_backward"; exit 2; }
	python -m autograder.gradescope build $(ASSIGNMENT) --visibility $(GS_VISIBILITY) --out "$(GRADING)/gradescope/$(ASSIGNMENT).zip"

# The zip just built, graded here as Gradescope would: a venv from its requirements-grading.txt
# alone (cached in /var/tmp/course-gradescope-venvs), its setup.sh, its run_autograder. NOTEBOOK
# (space-separated) grades those; without it, a correct answer, a mistake, the stub and another
# assignment's notebook. GRADESCOPE_PYTHON=/path/to/python3.11 chooses the Python.
NOTEBOOK ?=
gradescope-test: gradescope
	python -m autograder.gradescope test $(ASSIGNMENT) --zip "$(GRADING)/gradescope/$(ASSIGNMENT).zip" $(foreach n,$(NOTEBOOK),--notebook "$(n)")

screenshots: book
	python -m tests.browser.screenshots

# Where the website's launch buttons (Binder, Colab, and the JupyterHub button, an nbgitpuller
# link) take students: _config.yml's repository and hub, for the site and the student copy.
REPO ?=
HUB ?=
BRANCH ?= main
configure: $(STAMP)
	@if [ -z "$(REPO)" ] || [ -z "$(HUB)" ]; then \
	 echo "usage: make configure REPO=https://github.com/ORG/REPO HUB=https://HUB [BRANCH=main]"; exit 2; fi
	python -m autograder.release.configure --repo "$(REPO)" --hub "$(HUB)" --branch "$(BRANCH)"

student-repo: $(STAMP)
	python -m autograder.release --student-repo student-repo

# The website serves MathJax itself (no CDN: it must work offline). The files are committed under
# book/_vendor/mathjax; this target re-creates them from the pinned npm package, checksum first.
MATHJAX_VERSION := 3.2.2
MATHJAX_TGZ_SHA256 := 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09
MATHJAX_DIR := book/_vendor/mathjax
vendor-mathjax:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	 (cd "$$tmp" && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null) && \
	 echo "$(MATHJAX_TGZ_SHA256)  $$tmp/mathjax-$(MATHJAX_VERSION).tgz" | sha256sum -c --quiet - && \
	 tar -xzf "$$tmp/mathjax-$(MATHJAX_VERSION).tgz" -C "$$tmp" && \
	 rm -rf $(MATHJAX_DIR) && mkdir -p $(MATHJAX_DIR)/output/chtml/fonts && \
	 cp "$$tmp/package/LICENSE" "$$tmp/package/es5/tex-chtml-full.js" $(MATHJAX_DIR)/ && \
	 cp -r "$$tmp/package/es5/output/chtml/fonts/woff-v2" $(MATHJAX_DIR)/output/chtml/fonts/ && \
	 echo "mathjax $(MATHJAX_VERSION) (npm), es5/tex-chtml-full.js and its CHTML woff-v2 fonts; tarball sha256 $(MATHJAX_TGZ_SHA256)" > $(MATHJAX_DIR)/VERSION && \
	 (cd $(MATHJAX_DIR) && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
	@echo "vendored MathJax $(MATHJAX_VERSION) into $(MATHJAX_DIR)"

clean:
	rm -rf _build .pytest_cache .ruff_cache student-repo
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +
