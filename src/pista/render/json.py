"""The analysis as JSON: `summary`, `findings` (with evidence and advice), `table`, `notices`."""

from __future__ import annotations

import json as _json
import math
from typing import Any

from pista.analysis import Analysis
from pista.i18n import localize
from pista.render.controls import sanitize_json


def _finite(value: Any) -> Any:
    """JSON has no Infinity or NaN: a ratio over zero GPU time becomes null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def render(analysis: Analysis, row_limit: int = 25, lang: str = "en") -> str:
    analysis = localize(analysis, lang)
    text = _json.dumps(_finite(analysis.to_dict(row_limit=row_limit)), indent=1, ensure_ascii=False, allow_nan=False)
    return sanitize_json(text) + "\n"  # C1 and bidi controls as \u escapes: the same text, read back
