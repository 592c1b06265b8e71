#!/usr/bin/env bash
# System packages the tests need, from Debian's archive: chromium (the browser tests drive Debian's
# chromium, never a browser Playwright downloads), bubblewrap (the grading sandbox) and npm (the
# accessibility test fetches the pinned axe-core with `npm pack` once, into .cache/npm/; the hub
# test installs configurable-http-proxy with `npm ci`, which needs Node.js 20+: Debian 13's nodejs,
# or NodeSource's nodejs 20.x on Debian 12, whose own nodejs is 18; the hub's users are made with
# useradd from passwd, which every Debian has).
# Installs what is missing when it can (root, or sudo); otherwise says exactly what to run. The
# tests themselves fail loudly when chromium is missing; the grader warns loudly without bwrap.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v npm >/dev/null 2>&1 || missing+=(npm)
node_ok() { node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null; }
check_node() {
  node_ok && return 0
  echo "make hub and tests/test_hub.py need Node.js 20+ for configurable-http-proxy; this machine" \
    "has $(node --version 2>/dev/null || echo 'no node'). On Debian 12 install NodeSource's nodejs" \
    "20.x (https://github.com/nodesource/distributions); Debian 13's nodejs is 20" >&2
  return 1
}
if [ ${#missing[@]} -eq 0 ]; then check_node || true; exit 0; fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
  echo "missing Debian packages: ${missing[*]}; install them with: apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "installing Debian packages the tests need: ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
check_node || true
