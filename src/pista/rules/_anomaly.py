"""Anomaly mode's checks: the NaN checks the autograd engine runs on each backward node's outputs
under torch.autograd.detect_anomaly: not a rule.

anomaly-mode reports them; host-sync leaves their reads to it.
"""

from __future__ import annotations

import numpy as np

from pista.query import AUTOGRAD_NODE, name_mask, pattern_mask
from pista.trace.facts import Facts, per_facts

# the thresholds below are anomaly-mode's (`pista explain anomaly-mode`, [tool.pista.rules.anomaly-mode])
THRESHOLDS_OF = "anomaly-mode"

# What the engine runs on each node's outputs in anomaly mode, directly under the node (torch 2.x:
# isnan, then _is_any_true or any, then item; gpu/anomaly_cnn_on, gpu/anomaly_mlp_on)
SIGNATURE = "aten::isnan"
CHECK_OPS = frozenset({"aten::isnan", "aten::_is_any_true", "aten::any", "aten::item"})


@per_facts
def check_ops(facts: Facts) -> np.ndarray:
    """The engine's anomaly checks: the check ops directly under backward nodes that run an isnan
    check (in the steps), in time order; empty without anomaly mode."""
    trace = facts.trace
    ops = facts.is_host & name_mask(facts, CHECK_OPS)
    if facts.steps:
        ops &= facts.event_step >= 0
    idx = np.flatnonzero(ops)
    parent = facts.parent[idx]
    under_node = (parent >= 0) & pattern_mask(facts, AUTOGRAD_NODE)[np.maximum(parent, 0)]
    idx, parent = idx[under_node], parent[under_node]
    signed = np.unique(parent[name_mask(facts, {SIGNATURE})[idx]])  # nodes with the isnan check
    idx = idx[np.isin(parent, signed)]
    return idx[np.argsort(trace.ts[idx], kind="stable")].astype(np.int64)
