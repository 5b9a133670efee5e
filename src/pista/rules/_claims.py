"""The GPU idle that rules declare they claim, collected through the catalogue: not a rule.

A rule module that prices part of the per-op idle declares it as `claimed_idle(facts) -> Intervals`
(empty where it does not fire). Where its fix is a one-line change rather than a graph (a tanh-GELU
written out, inference in grad or train mode) it sets CLAIMS_FIRST as well, and launch-bound and
many-calls leave its claim out before they count; overhead-bound leaves out every declared claim. The
rules are found through the catalogue, not imported: no rule imports another.
"""

from __future__ import annotations

import numpy as np

from pista.rules import catalogue
from pista.rules._idle import union
from pista.trace.facts import Facts, Intervals


def specific_claims(facts: Facts) -> Intervals:
    """The per-op idle that rules with a one-line fix claim before launch-bound and many-calls: those
    whose module sets CLAIMS_FIRST (a tanh-GELU written out: one op for eight, not a graph; inference in
    grad mode: inference_mode; in train mode: eval)."""
    claims = [rule.module.claimed_idle(facts) for rule in catalogue() if getattr(rule.module, "CLAIMS_FIRST", False)]
    return union(np.concatenate([c.start for c in claims]), np.concatenate([c.end for c in claims]))


def other_claims(facts: Facts, leave_out: set[str]) -> dict[str, Intervals]:
    """The GPU idle each rule claims, for those that declare it (rule id -> its `claimed_idle(facts)`), in
    catalogue order, the rules in leave_out left out."""
    out = {}
    for rule in catalogue():
        claim = getattr(rule.module, "claimed_idle", None)
        if rule.id not in leave_out and callable(claim):
            out[rule.id] = claim(facts)
    return out


def claim_of(facts: Facts, rule_id: str) -> Intervals:
    """The GPU idle one rule declares it claims (empty where it declares none or does not fire)."""
    for rule in catalogue():
        claim = getattr(rule.module, "claimed_idle", None)
        if rule.id == rule_id and callable(claim):
            return claim(facts)
    return union(np.empty(0), np.empty(0))
