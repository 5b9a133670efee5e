"""The analysis as JSON: `summary`, `findings` (with evidence and advice), `table`, `notices`."""

from __future__ import annotations

import json as _json

from pista.findings import Analysis


def render(analysis: Analysis, row_limit: int = 25, lang: str = "en") -> str:
    from pista.i18n import localize

    analysis = localize(analysis, lang)
    return _json.dumps(analysis.to_dict(row_limit=row_limit), indent=1, ensure_ascii=False) + "\n"
