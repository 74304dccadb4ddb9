"""Sphinx configuration of the living spec site (built by tools/build_site.py, see `make spec`).

The source folder is a staging copy (build/site-src): these files, every notebook of
notebooks/ and the pages generated from RULES.md, the Spanish original and `histtrim.__all__`.
Notebooks are rendered from their committed outputs: nothing is executed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))  # the site's own Sphinx extension (not a notebook)

BUILD_INFO = json.loads((HERE / "_build_info.json").read_text(encoding="utf-8"))

project = "histtrim: the living spec"
author = "the histtrim project"
copyright = "the histtrim project (MIT)"
release = BUILD_INFO["version"]

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "histtrim_site",
]

root_doc = "index"
exclude_patterns = [
    "_build", "**.ipynb_checkpoints", "_build_info.json", "spec/*.txt", "spec/RULES.md",
]

# Notebooks: committed outputs only, never executed; errors in outputs are shown, not raised.
nb_execution_mode = "off"
# Outputs in the order the cell produced them: merging streams would move every printed label
# above all of a cell's tables (tools/build_site.py drops blank stream outputs instead).
nb_merge_streams = False
nb_number_source_lines = False
myst_enable_extensions = ["colon_fence", "deflist", "substitution", "attrs_inline"]
myst_heading_anchors = 3
myst_substitutions = {
    "build_commit": BUILD_INFO["commit"],
    "build_date": BUILD_INFO["date"],
    "test_status": BUILD_INFO["test_status"],
    "chapter_count": str(BUILD_INFO["chapter_count"]),
}

# API reference from the docstrings (markdown-style `code` spans read as literals).
default_role = "literal"
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {
    "members": True,
    "exclude-members": "model_config, model_fields, model_computed_fields, model_post_init",
}
autodoc_inherit_docstrings = False  # no str/BaseModel docstrings on our names
autodoc_typehints_format = "short"
python_maximum_signature_line_length = 88
autodoc_preserve_defaults = True
autosummary_generate = False
add_module_names = False
# The right-hand contents column lists a page's sections (a spec section, a module), not
# every documented object: hundreds of entries would bury the sections.
toc_object_entries = False
# Two modules may define the same short name (`Format`, `TokenCounter`): an annotation that
# names one resolves to the first match instead of warning that both exist.
suppress_warnings = ["ref.python"]

html_theme = "sphinx_book_theme"
html_title = "histtrim · the living spec"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
html_css_files = ["site.css"]
html_js_files = ["rules.js", "site.js"]  # rules.js: written by tools/build_site.py
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = True  # the search index's snippets
html_theme_options = {
    "show_toc_level": 2,
    "home_page_in_toc": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
    "collapse_navbar": False,
    "footer_content_items": [],
}
html_context = {"default_mode": "light"}
html_sidebars = {"**": ["navbar-logo.html", "search-button-field.html", "sbt-sidebar-nav.html"]}
# Wide tables (the names table, the rule table) get the page's full width: no right-hand TOC.
html_theme_options["secondary_sidebar_items"] = {
    "**": ["page-toc"], "spec/index": [], "spec/rules": [],
}
# One search field (the sidebar's), not a second one in the header bar.
html_theme_options["navbar_persistent"] = []

# Deterministic output regardless of where the clone lives.
os.environ.setdefault("SOURCE_DATE_EPOCH", str(BUILD_INFO["epoch"]))
