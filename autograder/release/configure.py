"""`make configure REPO=... HUB=...`: where the website's launch buttons take students.

Every chapter and exercise page has three launch buttons, built by Jupyter Book (sphinx-book-
theme) from ``_config.yml``: Binder and Colab open the page's notebook from the student-facing
repository (``repository.url``, ``repository.branch``), and the JupyterHub button is an
nbgitpuller link on the class's hub (``launch_buttons.jupyterhub_url``)::

    {hub}/hub/user-redirect/git-pull?repo={repository}&urlpath=lab/tree/{repo name}/{page}.ipynb&branch={branch}

which clones (or updates) the student copy into the student's home and opens the notebook there.
This command writes those three values into ``_config.yml`` (its comments and everything else
kept), which both the website and the student copy (``make student-repo`` copies ``_config.yml``
and names the hub and repository in its README) are built from. Then rebuild the site
(``make book``) and the student copy.

    python -m autograder.release.configure --repo https://github.com/ORG/REPO --hub https://HUB [--branch main]

Exit status 0 when written, 2 when an input is unusable (nothing is written).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from ..course import ROOT

CONFIG = ROOT / "_config.yml"
GITHUB = re.compile(
    r"^https://github\.com/([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)(?:\.git)?/?$"
)
BRANCH = re.compile(r"^[A-Za-z0-9._/-]+$")


PLACEHOLDER = re.compile(r"(^|\.)example\.(com|org|net|edu)$")  # RFC 2606's, as in _config.yml


def is_placeholder(url: str) -> bool:
    """No hub configured: none, or one of the example domains (``make configure`` sets it)."""
    return not url or bool(PLACEHOLDER.search(urlsplit(url).hostname or ""))


class ConfigureError(ValueError):
    """An unusable input: what was expected, what came, what to do."""


def check_repo(url: str) -> str:
    if not GITHUB.match(url):
        raise ConfigureError(
            f"REPO must be a GitHub repository, https://github.com/ORG/REPO (Binder's gh provider "
            f"and Colab's /github/ links open GitHub repositories only), not {url!r}"
        )
    org, repo = GITHUB.match(url).groups()
    return f"https://github.com/{org}/{repo}"


def check_hub(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigureError(
            f"HUB must be the hub's address, https://HOST[:PORT][/PREFIX] (what students open to "
            f"log in, without /hub/), not {url!r}"
        )
    path = parts.path.rstrip("/")
    if path.split("/")[-1] == "hub":
        raise ConfigureError(f"HUB is the hub's base address, without its /hub/: {url!r}")
    return f"{parts.scheme}://{parts.netloc}{path}"


def _set(text: str, section: str, key: str, value: str) -> str:
    """``key: value`` inside the top-level ``section:`` block of the YAML text, in place."""
    block = re.search(rf"^{section}:\n((?:[ \t]+.*\n|[ \t]*\n)*)", text, re.M)
    if not block:
        raise ConfigureError(f"_config.yml has no {section}: section")
    body = block.group(1)
    line = re.compile(rf"^([ \t]+{key}:[ \t]*)([^\n#]*?)([ \t]*(?:#.*)?)$", re.M)
    if not line.search(body):
        raise ConfigureError(f"_config.yml's {section}: section has no {key}: line")
    body = line.sub(lambda m: m.group(1) + value + m.group(3), body, count=1)
    return text[: block.start(1)] + body + text[block.end(1) :]


def configure(repo: str, hub: str, branch: str = "main", config: Path = CONFIG) -> dict:
    """Write the three values into ``config``; returns them (checked and normalised)."""
    values = {"url": check_repo(repo), "hub": check_hub(hub), "branch": branch}
    if not BRANCH.match(branch):
        raise ConfigureError(f"BRANCH must be a branch name, not {branch!r}")
    text = config.read_text(encoding="utf-8")
    text = _set(text, "repository", "url", values["url"])
    text = _set(text, "repository", "branch", values["branch"])
    text = _set(text, "launch_buttons", "jupyterhub_url", values["hub"])
    config.write_text(text, encoding="utf-8")
    return values


def read(config: Path = CONFIG) -> dict:
    """The repository, branch and hub _config.yml names now."""
    import yaml

    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    buttons = data.get("launch_buttons") or {}
    return {
        "url": data["repository"]["url"].rstrip("/"),
        "branch": data["repository"].get("branch", "main"),
        "hub": buttons.get("jupyterhub_url", "").rstrip("/"),
        "binder": buttons.get("binderhub_url", "").rstrip("/"),
        "colab": buttons.get("colab_url", "").rstrip("/"),
    }


def nbgitpuller_link(hub: str, repo: str, branch: str, path: str, interface: str = "lab/tree"):
    """The hub's nbgitpuller link that clones (or pulls) ``repo`` into the user's home, as the
    folder nbgitpuller names it by (the URL's last part, a ``.git`` kept), and opens ``path`` in it."""
    name = repo.rstrip("/").rsplit("/", 1)[-1]
    query = urlencode(
        {"repo": repo, "urlpath": f"{interface}/{name}/{path}", "branch": branch}, safe="/"
    )
    return f"{hub}/hub/user-redirect/git-pull?{query}"


def launch_links(values: dict, path: str, interface: str = "lab/tree") -> dict[str, str]:
    """The Binder, Colab and JupyterHub (nbgitpuller) links to ``path`` in the repository, as
    sphinx-book-theme builds them for a page (tests/test_configure.py checks they agree)."""
    url, branch = values["url"], values["branch"]
    org, repo = urlsplit(url).path.strip("/").split("/")[:2]
    return {
        "binder": f"{values['binder']}/v2/gh/{org}/{repo}/{branch}?urlpath={interface}/{path}",
        "colab": f"{values['colab']}/github/{org}/{repo}/blob/{branch}/{path}",
        "jupyterhub": nbgitpuller_link(values["hub"], url, branch, path, interface),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repo", required=True, help="the student copy: https://github.com/ORG/REPO")
    p.add_argument("--hub", required=True, help="the class's JupyterHub: https://HOST[/PREFIX]")
    p.add_argument("--branch", default="main")
    p.add_argument("--config", type=Path, default=CONFIG)
    args = p.parse_args(argv)
    try:
        values = configure(args.repo, args.hub, args.branch, args.config)
    except ConfigureError as exc:
        print(f"error: {exc}; {args.config} is unchanged", file=sys.stderr)
        return 2
    print(
        f"{args.config}: repository {values['url']} (branch {values['branch']}), hub {values['hub']}"
    )
    print("now rebuild the website (make book) and the student copy (make student-repo)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
