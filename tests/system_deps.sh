#!/usr/bin/env bash
# System packages the tests need, from Debian's archive: chromium (the browser tests drive Debian's
# chromium, never a browser Playwright downloads), bubblewrap (the grading sandbox) and npm (the
# accessibility test fetches the pinned axe-core with `npm pack` once, into .cache/npm/).
# Installs what is missing when it can (root, or sudo); otherwise says exactly what to run. The
# tests themselves fail loudly when chromium is missing; the grader warns loudly without bwrap.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
  echo "missing Debian packages: ${missing[*]}; install them with: apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "installing Debian packages the tests need: ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
