#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu), after
# unpacking the zip into $GRADESCOPE_ROOT/source. $GRADESCOPE_ROOT defaults to /autograder.
#
# 1. the sandbox's tools: bubblewrap (used where the container allows it) and util-linux
#    (prlimit, setpriv: the kernel runs as an unprivileged user where bubblewrap cannot);
# 2. a Python the course supports (>= @MIN_PYTHON@): the image's own when it is new enough,
#    else deadsnakes' (Ubuntu), else uv's standalone build, installed world-readable under
#    /opt/course-python (the kernel's unprivileged user must be able to run it);
#    GRADESCOPE_PYTHON=/path/to/python chooses one yourself;
# 3. $GRADESCOPE_ROOT/venv from requirements-grading.txt alone (skipped when it exists;
#    GRADESCOPE_VENV=/path puts it elsewhere: make gradescope-test keeps one per requirements);
# 4. the kernel's user (GRADESCOPE_KERNEL_USER, default "student"; a bare uid needs no account);
# 5. source/ and results/ made root's alone, and a check that the grader imports from source/.
set -euo pipefail

GS="${GRADESCOPE_ROOT:-/autograder}"
SRC="$GS/source"
VENV="${GRADESCOPE_VENV:-$GS/venv}"
MIN_PYTHON="@MIN_PYTHON@"
KERNEL_USER="${GRADESCOPE_KERNEL_USER:-student}"
export DEBIAN_FRONTEND=noninteractive

say() { printf '[setup] %s\n' "$*"; }

install_tools() {
    if command -v bwrap >/dev/null && command -v prlimit >/dev/null && command -v setpriv >/dev/null; then
        say "bubblewrap and util-linux: already installed"
        return
    fi
    apt-get update -q
    apt-get install -y -q --no-install-recommends bubblewrap util-linux
}

supported() { "$1" -c "import sys; sys.exit(sys.version_info < tuple(map(int, '$MIN_PYTHON'.split('.'))))" 2>/dev/null; }

find_python() {
    local c
    for c in "${GRADESCOPE_PYTHON:-}" python3.13 python3.12 python3.11 python3; do
        if [ -n "$c" ] && command -v "$c" >/dev/null && supported "$(command -v "$c")"; then
            command -v "$c"
            return 0
        fi
    done
    return 1
}

install_python() {
    say "the image's Python is older than $MIN_PYTHON: installing python$MIN_PYTHON"
    apt-get update -q
    if command -v add-apt-repository >/dev/null || apt-get install -y -q software-properties-common; then
        if add-apt-repository -y ppa:deadsnakes/ppa && apt-get update -q &&
            apt-get install -y -q "python$MIN_PYTHON" "python$MIN_PYTHON-venv"; then
            return 0
        fi
    fi
    say "deadsnakes failed: trying uv's standalone Python"
    apt-get install -y -q --no-install-recommends curl ca-certificates
    curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=/usr/local/bin sh
    UV_PYTHON_INSTALL_DIR=/opt/course-python uv python install "$MIN_PYTHON"
    chmod -R a+rX /opt/course-python
    ln -sf "$(UV_PYTHON_INSTALL_DIR=/opt/course-python uv python find "$MIN_PYTHON")" "/usr/local/bin/python$MIN_PYTHON"
}

make_venv() {
    if [ -e "$VENV" ]; then
        say "$VENV exists: kept"
        return
    fi
    local py
    py="$(find_python)" || { install_python; py="$(find_python)"; }
    say "creating $VENV with $py ($("$py" --version))"
    if ! "$py" -m venv "$VENV"; then # Debian and Ubuntu ship venv's pip separately
        rm -rf "$VENV"
        apt-get update -q
        apt-get install -y -q "python$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv"
        "$py" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q --no-cache-dir -r "$SRC/requirements-grading.txt"
    if [ "$(id -u)" -eq 0 ]; then chown -R root:root "$VENV"; fi
    chmod -R go-w "$VENV" # the kernel's user may run it, never change what the grader imports
}

make_user() {
    if [[ "$KERNEL_USER" =~ ^[0-9]+$ ]] || id -u "$KERNEL_USER" >/dev/null 2>&1; then
        say "kernel user $KERNEL_USER: exists"
        return
    fi
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
        --user-group "$KERNEL_USER"
    say "created the kernel user $KERNEL_USER"
}

lock_down() {
    mkdir -p "$GS/results"
    chmod 700 "$SRC" "$GS/results"
}

install_tools
make_venv
make_user
lock_down
# The grader must import from source/ with the venv's packages alone (nothing else on the path).
(cd "$SRC" && env -u PYTHONPATH "$VENV/bin/python" -c '
import os, sys, autograder, autograder.gradescope.runner, numpy, ipykernel, jinja2
where = os.path.realpath(autograder.__file__)
if not where.startswith(os.path.realpath(sys.argv[1]) + "/"):
    sys.exit("the grader was imported from " + where + ", not from " + sys.argv[1])
print("[setup] the grader imports from", where)
' "$SRC")
say "ready: $("$VENV/bin/python" --version), grading $(cd "$SRC" && "$VENV/bin/python" -c 'import json; print(json.load(open("gradescope.json"))["assignment"])')"
