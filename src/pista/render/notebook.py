"""An Analysis in a notebook: `_repr_html_` shows the HTML report's summary and findings inline (the
page's own markup and style, scoped to one element, no script and nothing fetched); elsewhere (a
REPL, IPython in a terminal) Analysis.__repr__'s one line, and `pista analyze` for the report."""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Analysis._repr_html_ calls this module: it reads an Analysis, never builds one
    from pista.analysis import Analysis

# The element every rule of the report's stylesheet is scoped to: the notebook's own page keeps its look.
SCOPE = "pista-nb"


def render_html(analysis: Analysis, lang: str = "en") -> str:
    """The summary (verdict, totals, top fix, where the time goes) and the findings with their
    evidence, as the report shows them; figures in three significant digits."""
    # start-up: a notebook displays an Analysis without the HTML renderer loaded
    from pista.i18n import localize, words
    from pista.i18n._fmt import short_figures
    from pista.render.html import _asset, _findings, _header

    analysis = localize(analysis, lang)
    labels = words(lang)
    with short_figures():
        header, findings = _header(analysis, labels, lang), _findings(analysis, labels, lang)
    title = html.escape(f"pista: {analysis.source}")
    return (f'<div class="{SCOPE}"><style>{scoped_css(_asset("report.css"))}</style>'
            f'<p class="nb-title">{title}</p>'
            f'<section class="card summary">{header}</section>'
            f'<section class="findings"><h2>{html.escape(labels.get("Findings", "Findings"))}</h2>{findings}</section>'
            "</div>")


def scoped_css(css: str) -> str:
    """The report's stylesheet with every selector under `.pista-nb` (:root and body become it)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return re.sub(r"(^|[{}])([^{}@]+)\{", lambda m: m.group(1) + _scope(m.group(2)) + "{", css)


def _scope(selectors: str) -> str:
    out = []
    for sel in selectors.split(","):
        sel = sel.strip()
        if not sel:
            continue
        if sel in (":root", "body", "html"):
            out.append(f".{SCOPE}")
        else:
            out.append(f".{SCOPE} {sel}")
    return ", ".join(out) + " "
