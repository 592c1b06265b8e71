"""configurable-http-proxy, JupyterHub's proxy, from npm: pinned with its lock file
(``autograder/hub/npm/``), installed by ``npm ci`` into ``.hub/proxy/`` (gitignored) and reused
while the lock file is unchanged."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

from ..course import ROOT

NPM = Path(__file__).resolve().parent / "npm"
INSTALL = ROOT / ".hub" / "proxy"
NODE_MAJOR = 20  # configurable-http-proxy 5.2's engines (and its dependencies')


class ProxyError(RuntimeError):
    """No proxy: node or npm missing or too old, or the install failed (says what to do)."""


def command() -> Path:
    return INSTALL / "node_modules" / ".bin" / "configurable-http-proxy"


def _node_major() -> int:
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        raise ProxyError(
            f"make hub needs Node.js {NODE_MAJOR}+ and npm for JupyterHub's proxy "
            "(configurable-http-proxy): install them (Debian 12's nodejs is 18: use NodeSource's "
            f"nodejs {NODE_MAJOR}.x, or `apt-get install nodejs npm` on Debian 13)"
        )
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    m = re.match(r"v(\d+)\.", out.strip())
    return int(m.group(1)) if m else 0


def install() -> Path:
    """The proxy's command, installed from the lock file when it is missing or out of date."""
    lock = (NPM / "package-lock.json").read_bytes()
    stamp = INSTALL / ".lock-sha256"
    digest = hashlib.sha256(lock + (NPM / "package.json").read_bytes()).hexdigest()
    if command().exists() and stamp.is_file() and stamp.read_text().strip() == digest:
        return command()
    major = _node_major()
    if major < NODE_MAJOR:
        raise ProxyError(
            f"configurable-http-proxy needs Node.js {NODE_MAJOR}+, this machine has {major}"
        )
    if INSTALL.exists():
        shutil.rmtree(INSTALL)
    INSTALL.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(NPM / name, INSTALL / name)
    proc = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
        cwd=INSTALL,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not command().exists():
        raise ProxyError(f"npm ci of configurable-http-proxy failed:\n{proc.stderr[-2000:]}")
    stamp.write_text(digest + "\n")
    return command()
