"""Tanh-GELU chains: the ops of the formula written out, found by their order on a thread: not a rule.

tanh-gelu reports them; unfused-elementwise names the formula where its kernels are a chain's.
"""

from __future__ import annotations

import numpy as np

from pista.query import name_mask
from pista.rules._common import outer_ops, step_ops
from pista.trace.facts import Facts, per_facts

# the thresholds below are tanh-gelu's (`pista explain tanh-gelu`, [tool.pista.rules.tanh-gelu])
THRESHOLDS_OF = "tanh-gelu"

# The formula's ops around its tanh: HF's NewGELUActivation gives mul, pow, mul, add, mul | tanh | add,
# mul (gpu/kv_flash, gpu/gpt2_conv1d); a chain is a tanh with a pow among the BEFORE ops ahead of it and
# nothing but these ops in the BEFORE ahead and AFTER behind it, on its thread, outside any other op.
CHAIN_OPS = frozenset({"aten::mul", "aten::pow", "aten::add", "aten::tanh"})
BEFORE = 5
AFTER = 2


@per_facts
def chain_ops(facts: Facts) -> np.ndarray:
    """The ops of every tanh-GELU chain in the steps, chain after chain (BEFORE + 1 + AFTER each),
    whatever they cost: unfused-elementwise names the formula where its kernels are a chain's."""
    none = np.empty(0, dtype=np.int64)
    if not (step_ops(facts) & name_mask(facts, {"aten::tanh"})).any():
        return none
    outer, lane = outer_ops(facts)
    in_chain = name_mask(facts, CHAIN_OPS)[outer]
    is_pow = name_mask(facts, {"aten::pow"})[outer]
    chains = []
    for k in np.flatnonzero(name_mask(facts, {"aten::tanh"})[outer]).tolist():
        lo, hi = k - BEFORE, k + AFTER + 1
        if lo < 0 or hi > outer.size or lane[lo] != lane[hi - 1]:
            continue
        if in_chain[lo:hi].all() and is_pow[lo:k].any():
            chains.append(outer[lo:hi])
    return np.concatenate(chains).astype(np.int64) if chains else none
