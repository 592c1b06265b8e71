"""A hub user as the tests drive one: everything through the hub's proxy, with the user's own
login and token, the way JupyterLab talks to its server.

* :meth:`HubUser.login` posts the hub's login form (with its ``_xsrf``), as a browser does, then
  asks the hub's REST API for a token of the user's own;
* :meth:`HubUser.start` starts the user's server through the hub's REST API and waits for it;
* :meth:`HubUser.call` calls the user's server: the Contents API (save a notebook, read a file),
  nbgrader's handlers behind JupyterLab's Assignments tab (``assignments``, ``assignments/fetch``,
  ``assignments/validate``, ``assignments/submit``, ``assignments/fetch_feedback``) and
  formgrader's API;
* :meth:`HubUser.run_code` runs code in a kernel of the user's server over its websocket, as a
  notebook cell does (the code runs as that Unix user).

:class:`Hub` runs `make hub` in the background for a test, as an instructor would in a terminal.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import requests

ROOT = Path(__file__).resolve().parent.parent


class HubError(AssertionError):
    """A step through the hub failed: the message says which, and what came back."""


class HubUser:
    def __init__(self, base: str, name: str, password: str):
        self.base = base.rstrip("/") + "/"
        self.name = name
        self.password = password
        self.session = requests.Session()
        self.token: str | None = None

    # -- the hub ----------------------------------------------------------------------------
    def login(self) -> HubUser:
        s = self.session
        r = s.get(self.base + "hub/login", timeout=30)
        r.raise_for_status()
        xsrf = s.cookies.get("_xsrf", "")
        r = s.post(
            self.base + "hub/login",
            data={"username": self.name, "password": self.password, "_xsrf": xsrf},
            allow_redirects=False,
            timeout=30,
        )
        if r.status_code not in (302, 303):
            raise HubError(f"{self.name} could not log in: {r.status_code} {r.text[:300]}")
        r = s.post(
            self.base + f"hub/api/users/{self.name}/tokens",
            json={"note": "the course's hub test", "expires_in": 3600},
            headers={"X-XSRFToken": s.cookies.get("_xsrf", xsrf), "Referer": self.base + "hub/"},
            timeout=30,
        )
        if r.status_code != 201:
            raise HubError(f"{self.name}: no token: {r.status_code} {r.text[:300]}")
        self.token = r.json()["token"]
        return self

    def headers(self) -> dict:
        return {"Authorization": f"token {self.token}"}

    def hub(self, method: str, path: str, **kw) -> requests.Response:
        return requests.request(
            method, self.base + "hub/api/" + path, headers=self.headers(), timeout=60, **kw
        )

    def start(self) -> None:
        r = self.hub("POST", f"users/{self.name}/server")
        if r.status_code not in (201, 202, 400):  # 400: already running
            raise HubError(f"{self.name}'s server did not start: {r.status_code} {r.text[:300]}")

    def wait_ready(self, timeout: float = 240) -> float:
        """Seconds until the user's server is ready (through the hub's API)."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            server = (self.hub("GET", f"users/{self.name}").json().get("servers") or {}).get("")
            if server and server.get("ready"):
                return time.monotonic() - start
            time.sleep(0.5)
        raise HubError(f"{self.name}'s server was not ready after {timeout:.0f} s")

    # -- the user's server --------------------------------------------------------------------
    def url(self, path: str) -> str:
        return self.base + f"user/{self.name}/" + path.lstrip("/")

    def call(self, method: str, path: str, ok=(200, 201), **kw) -> requests.Response:
        r = requests.request(method, self.url(path), headers=self.headers(), timeout=300, **kw)
        if ok and r.status_code not in ok:
            raise HubError(f"{self.name}: {method} {path}: {r.status_code} {r.text[:500]}")
        return r

    def json(self, method: str, path: str, **kw):
        return self.call(method, path, **kw).json()

    def save_notebook(self, path: str, notebook: dict) -> None:
        """What JupyterLab's save does: PUT the notebook to the Contents API."""
        self.call(
            "PUT", "api/contents/" + quote(path), json={"type": "notebook", "content": notebook}
        )

    def save_text(self, path: str, text: str) -> None:
        model = {"type": "file", "format": "text", "content": text}
        self.call("PUT", "api/contents/" + quote(path), json=model)

    def read_text(self, path: str) -> str:
        model = self.json("GET", "api/contents/" + quote(path) + "?type=file&format=text&content=1")
        return model["content"]

    def nbgrader(self, action: str, **data):
        """One of nbgrader's handlers behind the Assignments tab; its JSON answer."""
        if action == "list":
            return self.json("GET", "assignments", params=data)
        return self.json("POST", f"assignments/{action}", data=data)

    def run_code(self, code: str, timeout: float = 120) -> dict:
        """Run ``code`` in a new kernel of the user's server; {"stdout", "error"}."""
        kernel = self.json("POST", "api/kernels", json={"name": "python3"})
        try:
            # its own thread: the caller's may run an event loop already (Playwright's)
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(asyncio.run, self._execute(kernel["id"], code, timeout)).result()
        finally:
            self.call("DELETE", f"api/kernels/{kernel['id']}", ok=(204, 404))

    async def _execute(self, kernel_id: str, code: str, timeout: float) -> dict:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = self.url(f"api/kernels/{kernel_id}/channels").replace("http", "ws", 1)
        ws = await websocket_connect(HTTPRequest(url, headers=self.headers()))
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": "execute_request",
            "username": self.name,
            "session": uuid.uuid4().hex,
            "version": "5.3",
        }
        content = {
            "code": code,
            "silent": False,
            "store_history": False,
            "user_expressions": {},
            "allow_stdin": False,
        }
        ws.write_message(
            json.dumps(
                {
                    "header": header,
                    "parent_header": {},
                    "metadata": {},
                    "content": content,
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
        out, error = [], None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(ws.read_message(), timeout)
            if raw is None:
                break
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "stream":
                out.append(msg["content"]["text"])
            elif kind == "error":
                error = f"{msg['content']['ename']}: {msg['content']['evalue']}"
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                break
        ws.close()
        return {"stdout": "".join(out), "error": error}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    """`make hub` in the background (its own session): its output, settings, and stopping it."""

    def __init__(self, home: Path, grading: Path, instructor: str, student: str, n: int):
        self.home, self.grading = home, grading
        self.port = free_port()
        self.out: list[str] = []
        args = [
            f"HUB_DIR={home}",
            f"HUB_PORT={self.port}",
            f"HUB_INSTRUCTOR={instructor}",
            f"HUB_STUDENT={student}",
            f"HUB_STUDENTS={n}",
            f"GRADING={grading}",
        ]
        self.proc = subprocess.Popen(
            ["make", "-s", "hub", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.out.append(line)

    def wait_up(self, timeout: float = 300) -> dict:
        """The trial's settings (URL, users, passwords), once `make hub` says it is up."""
        deadline = time.monotonic() + timeout
        while not any("trial hub is up" in ln for ln in self.out):
            assert self.proc.poll() is None, "make hub exited:\n" + "".join(self.out)
            assert time.monotonic() < deadline, "make hub: not up:\n" + "".join(self.out)
            time.sleep(0.3)
        return json.loads((self.home / "state" / "settings.json").read_text())

    def stop(self, timeout: float = 120) -> int:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)  # make passes it on to the hub's process
        return self.proc.wait(timeout=timeout)
