"""English: one module per rule with the text of its findings; renderers' labels are their own keys."""

from __future__ import annotations

WORDS: dict[str, str] = {
    "python": "Python between ops",
    # the brief terminal report's last line: where the rest is
    "more hint -v": "-v: each finding in full",
    "more hint report": "the HTML page",
    "more hint table": "the op table",  # a host-time region: the user's code outside any op
    "severity from impact": ("severity from impact: critical from 20% of the step, warning from 5%, info below; "
                             "a one-time cost at most warning"),
}
