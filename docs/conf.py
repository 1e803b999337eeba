"""Sphinx configuration of dpkit's documentation site: ``make docs`` builds it into docs/_site.

Every page is a MyST-NB markdown notebook executed at build time (a failing cell fails the
build); the API reference is generated from the docstrings of the public names
(``_ext/dpkit_api.py``); MathJax and the theme are bundled, so the site loads nothing from
the network when it is built or read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dpkit

sys.path.insert(0, str(Path(__file__).parent / "_ext"))
# the pages' kernels inherit this environment: no terminal width, so the command line's
# tables are laid out as in the snapshots whatever shell runs the build
os.environ.pop("COLUMNS", None)

project = "dpkit"
author = "dpkit developers"
copyright = "dpkit developers, MIT licence"
version = release = dpkit.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static: no CDN
    "dpkit_api",
    "dpkit_site",
]

exclude_patterns = ["_build", "_site", "_snapshots", "_screenshots", "_ext", "jupyter_execute"]
suppress_warnings = [
    # `Query` names both dpkit.session.Query and dpkit.queries.Query in docstrings
    "ref.python",
]

# -- MyST and notebook execution -----------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3  # GitHub's anchors, so links work on GitHub and on the site
nb_execution_mode = "force"  # every cell of every page runs at every build
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600
nb_execution_in_temp = True  # ledgers and files a page writes stay out of docs/
nb_merge_streams = True
nb_output_stderr = "show"

# -- autodoc (NumPy-style docstrings through napoleon) -------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_ivar = True  # an Attributes section describes fields, it does not redefine them
napoleon_custom_sections = ["Privacy"]

# -- HTML ----------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"dpkit {release}"
html_static_path = ["_static"]
html_css_files = ["dpkit.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
