"""Two guards of the site: links to the repository's files, and nothing fetched from outside.

* A page may link a file of the repository outside ``docs/`` (``../src/dpkit/_lattice.py``,
  ``../benchmarks/README.md``), as it does on GitHub. MyST copies such a file into the site
  as a download, except a Markdown file, which it takes for a missing page; this transform
  makes that one a download too. A link to a file that does not exist stays a broken link
  (an error under ``make docs``).
* When the build finishes, every HTML and CSS file of the site is read: a script, a
  stylesheet, a font, an image or an iframe loaded from ``http(s)://`` or ``//`` is an error,
  so the site works with no network when it is read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_REMOTE_HTML = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio)\b[^>]*?\b(?:src|href)\s*=\s*[\"']"
    r"(?:https?:)?//[^\"']*",
    re.I,
)
_REMOTE_CSS = re.compile(r"(?:url\(\s*[\"']?|@import\s+[\"'])(?:https?:)?//[^\"')]*", re.I)


def remote_loads(site: Path) -> list[str]:
    """Every resource the site's HTML or CSS would load from the network: ``file: match``."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix == ".html":
            pattern = _REMOTE_HTML
        elif path.suffix == ".css":
            pattern = _REMOTE_CSS
        else:
            continue
        text = path.read_text(errors="replace")
        found += [f"{path.relative_to(site)}: {m.group(0)[:120]}" for m in pattern.finditer(text)]
    return found


def setup(app: Any) -> dict[str, Any]:
    from sphinx import addnodes
    from sphinx.transforms import SphinxTransform
    from sphinx.util import logging

    logger = logging.getLogger(__name__)

    class RepositoryFileLinks(SphinxTransform):
        """A Markdown link to a repository file outside ``docs/`` becomes a download."""

        default_priority = 900

        def apply(self, **kwargs: Any) -> None:
            srcdir = Path(self.env.srcdir).resolve()
            for node in list(self.document.findall(addnodes.pending_xref)):
                if node.get("reftype") != "myst" or node.get("refdomain") != "doc":
                    continue
                target = str(node["reftarget"])
                if target in self.env.found_docs:
                    continue
                path = Path(target + ".md")
                if not path.is_absolute():
                    continue
                path = path.resolve()
                if path.is_relative_to(srcdir) or not path.is_file():
                    continue
                here = Path(self.env.doc2path(self.env.docname)).parent
                download = addnodes.download_reference(
                    "",
                    "",
                    *node.children,
                    refdomain=None,
                    reftype="myst",
                    refdoc=self.env.docname,
                    refexplicit=True,
                    reftarget=os.path.relpath(path, here),
                    classes=["xref", "download", "myst"],
                )
                node.replace_self(download)

    def check_offline(app: Any, exc: Exception | None) -> None:
        if exc is not None or app.builder.format != "html":
            return
        for hit in remote_loads(Path(app.outdir)):
            logger.warning("the site loads a resource from the network: %s", hit)

    app.add_transform(RepositoryFileLinks)
    app.connect("build-finished", check_offline)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
