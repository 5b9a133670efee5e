"""English text of pista's typed notices: a rule that raised on the trace (pista.isolation)."""

from __future__ import annotations

from pista.isolation import RuleFailed


def rule_failed(r: RuleFailed) -> str:
    if r.stage == "replay":
        return (f"rule {r.rule}'s fix could not be replayed on this trace ({r.error}): its findings keep the rule's "
                "own estimate; the other findings stand. Please report it with the trace if you can")
    return (f"rule {r.rule} failed on this trace ({r.error}) and is left out; the other rules' findings stand. "
            "Please report it with the trace if you can")


NOTES = {RuleFailed: rule_failed}
