"""A student in JupyterLab's Assignments tab (nbgrader's Nbgrader > Assignment List), driven in
Debian's chromium through the trial hub, as tests/test_hub.py uses one.

Every action is a click the student makes: log in on the hub's page, open the Assignments tab,
Fetch, open the notebook, Validate, Submit, Fetch Feedback, open the feedback page, and the
website's JupyterHub launch button (an nbgitpuller link). What the student typed is saved
through their own Contents API (as JupyterLab saves), with the notebook closed in the browser.
Each step can leave a screenshot (``out``).
"""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from . import harness

LONG = 240_000  # ms: a loaded machine starts servers and kernels slowly


class BrowserStudent:
    def __init__(self, playwright, url: str, name: str, password: str, out: Path | None):
        self.url, self.name, self.password, self.out = url, name, password, out
        self.browser = harness.launch(playwright)
        self.page = self.browser.new_context(viewport={"width": 1300, "height": 820}).new_page()
        self.shots: list[Path] = []
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for old in out.glob("*.png"):
                old.unlink()

    def close(self) -> None:
        self.browser.close()

    def shot(self, name: str) -> None:
        if self.out is None:
            return
        time.sleep(0.5)  # let the panel settle
        path = self.out / f"{len(self.shots):02d}_{name}.png"
        self.page.screenshot(path=str(path))
        self.shots.append(path)

    def log_in(self) -> str:
        """The hub's login page, then JupyterLab; returns the lab's URL."""
        page = self.page
        page.goto(self.url + "hub/login")
        page.fill("#username_input", self.name)
        page.fill("#password_input", self.password)
        self.shot("login")
        page.click("#login_submit")
        page.wait_for_url("**/lab**", timeout=LONG)
        page.wait_for_selector("#jp-main-dock-panel", timeout=LONG)
        return page.url

    def assignments(self) -> str:
        """Nbgrader > Assignment List (opened or brought to front); the tab's text."""
        page = self.page
        page.get_by_text("Nbgrader", exact=True).click()
        page.get_by_text("Assignment List", exact=True).click()
        page.wait_for_selector("#released_assignments_list", timeout=LONG)
        page.locator("#refresh_assignments_list").click()
        page.wait_for_selector("#released_assignments_list_loading", state="hidden")
        time.sleep(1)
        return page.locator("#assignments").inner_text()

    def fetch(self) -> str:
        self.assignments()
        self.shot("released")
        self.page.get_by_role("button", name="Fetch", exact=True).click()
        self.page.wait_for_selector("#fetched_assignments_list a.assignment-notebooks-link")
        self._expand()
        self.shot("fetched")
        return self.page.locator("#fetched_assignments_list").inner_text()

    def _expand(self) -> None:
        """The downloaded assignment's notebooks (each with its Validate button)."""
        if not self.page.locator("#fetched_assignments_list .collapse.in").count():
            self.page.locator("#fetched_assignments_list a.assignment-notebooks-link").click()
            self.page.wait_for_selector("#fetched_assignments_list .collapse.in")

    def open_notebook(self, stem: str) -> str:
        """Click the notebook in the Assignments tab; the first heading JupyterLab shows."""
        self._expand()
        self.page.locator("#fetched_assignments_list .collapse.in a", has_text=stem).click()
        self.page.wait_for_selector(".jp-Notebook .jp-RenderedMarkdown h1", timeout=LONG)
        self.shot("notebook")
        heading = self.page.locator(".jp-Notebook .jp-RenderedMarkdown h1").first.inner_text()
        self.page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
        # JupyterLab may have touched the notebook's metadata on opening: nothing was typed here
        discard = self.page.get_by_role("button", name="Discard")
        try:
            discard.wait_for(timeout=3_000)
            discard.click()
        except PlaywrightTimeout:
            pass
        self.page.wait_for_selector(".jp-Notebook", state="detached", timeout=LONG)
        return heading

    def validate(self, name: str) -> str:
        """Validate in the Assignments tab; the dialog's whole text (then it is closed)."""
        self.assignments()
        self._expand()
        self.page.get_by_role("button", name="Validate", exact=True).click()
        dialog = self.page.locator(".jp-Dialog")
        dialog.wait_for(timeout=LONG)
        for box in dialog.locator("pre, div").all():
            box.evaluate(
                "e => { if (e.scrollHeight > e.clientHeight) e.scrollTop = e.scrollHeight }"
            )
        self.shot(f"validate_{name}")
        text = dialog.inner_text()
        dialog.locator("button").last.click()
        dialog.wait_for(state="detached")
        return text

    def submit(self, name: str) -> list[str]:
        """Submit; the submissions' timestamps the tab lists afterwards."""
        before = self.page.locator(
            "#submitted_assignments_list .nested_list_item .item_name"
        ).count()
        self.page.get_by_role("button", name="Submit", exact=True).click()
        rows = self.page.locator("#submitted_assignments_list .nested_list_item .item_name")
        deadline = time.monotonic() + LONG / 1000
        while rows.count() <= before and time.monotonic() < deadline:
            time.sleep(0.3)
        self.shot(f"submitted_{name}")
        return [t.strip() for t in rows.all_inner_texts()]

    def feedback(self) -> str:
        """Fetch Feedback, (view feedback), open the page; the page's text as JupyterLab shows."""
        self.assignments()
        self.shot("feedback_available")
        self.page.get_by_role("button", name="Fetch Feedback", exact=True).click()
        link = self.page.get_by_text("(view feedback)")
        link.last.wait_for(timeout=LONG)
        link.last.click()
        item = self.page.locator(".jp-DirListing-item", has_text=".html")
        item.first.wait_for(timeout=LONG)
        self.shot("feedback_folder")
        item.first.dblclick()
        frame = self.page.frame_locator(".jp-RenderedHTML iframe, iframe").first
        frame.locator("h1").wait_for(timeout=LONG)
        self.shot("feedback_page")
        return frame.locator("body").inner_text()

    def git_pull(self, link: str, name: str) -> str:
        """The website's JupyterHub launch button: nbgitpuller's page clones (or pulls) the
        repository into the student's home and opens the notebook; its first heading."""
        self.page.goto(link)
        heading = self.page.locator(".jp-Notebook .jp-RenderedMarkdown h1").first
        try:
            heading.wait_for(timeout=LONG)
        finally:
            self.shot(name)  # what the student saw, also when no notebook opened
        text = heading.inner_text()
        self.page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
        discard = self.page.get_by_role("button", name="Discard")
        try:
            discard.wait_for(timeout=3_000)
            discard.click()
        except PlaywrightTimeout:
            pass
        return text
