"""Sphinx extension (loaded from _config.yml's `local_extensions`): keep the website self-contained.

* Every page must load its scripts and styles from the site itself (it must work offline): a
  script or stylesheet with an absolute URL is a build warning, so `-W` fails the build.
* Sphinx 7.4 emits an inline script registered after the builder started (sphinx-thebe's
  `const THEBE_JS_URL = ...`, sphinx-togglebutton's settings) twice, and the second `const`
  is a SyntaxError in every page's console: drop the repeated copies.
* pydata-sphinx-theme logs a console error on a reader's first visit unless it has a default
  colour mode: default to "auto" (follow the reader's system setting).
"""

from __future__ import annotations

from sphinx.util import logging

logger = logging.getLogger(__name__)

ABSOLUTE = ("http://", "https://", "//")


def _default_mode(app, config) -> None:
    # pydata-sphinx-theme reads it from the template context (`html_context`), not theme options.
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "auto")
    config.html_context = context


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if scripts:
        seen, kept = set(), []
        for js in scripts:
            attrs = getattr(js, "attributes", {})
            key = (getattr(js, "filename", js) or "", tuple(sorted(attrs.items())))
            if key not in seen:
                seen.add(key)
                kept.append(js)
        scripts[:] = kept
    for kind in ("script_files", "css_files"):
        for asset in context.get(kind) or []:
            name = str(getattr(asset, "filename", asset) or "")
            if name.startswith(ABSOLUTE):
                logger.warning(
                    "page %s loads %s from another site; the website must work offline: "
                    "serve it from _static (see `make vendor-mathjax`)",
                    pagename,
                    name,
                    type="course",
                    subtype="external_asset",
                    location=pagename,
                )


def setup(app):
    app.connect("config-inited", _default_mode)
    # After the other extensions have added their per-page assets.
    app.connect("html-page-context", _page_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
