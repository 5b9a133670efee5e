"""The names rules import from one place, each kept where its job is (`analyze()` and `Analysis` are
pista.analysis's: it runs the rules, so this module, below them, does not hold it):

- pista.finding: the data a rule produces (`Finding`, `Impact`, `Evidence`, `Record`);
- pista.policy: severity, the verdict's thresholds, the reading order and the top fix;
- pista.schema: the JSON form (`JSON_SCHEMA_VERSION`);
- pista.context: what a rule receives (`Context`, `Summary`) and what impacts are shared out by (`Steps`);
- pista.notices: the notices' text; pista.isolation: a rule that raises.
"""

from __future__ import annotations

from pista.context import Context, Steps, Summary, step_ns, steps_of
from pista.finding import (
    NOT_USER_FRAME,
    Evidence,
    Finding,
    Impact,
    Record,
    record_fields,
    top_indices,
    user_stack,
)
from pista.isolation import RuleFailed
from pista.notices import coverage_notices, one_time_notices, verdict_notices
from pista.policy import (
    COMPUTE_MAX_RATIO,
    COMPUTE_MIN_GPU_BUSY,
    CRITICAL_SHARE,
    ONE_TIME_MAX_SEVERITY,
    OVERHEAD_MAX_GPU_BUSY,
    OVERHEAD_RATIO,
    SEVERITY_ORDER,
    TOP_FIX_MIN_SHARE,
    UMBRELLA_RULES,
    UMBRELLA_YIELD,
    WARNING_SHARE,
    WRONG_RESULTS_RULES,
    Severity,
    order_key,
    severity_of,
    top_fix,
    verdict_of,
)
from pista.schema import JSON_SCHEMA_VERSION, KERNEL_ROWS

__all__ = [
    "COMPUTE_MAX_RATIO", "COMPUTE_MIN_GPU_BUSY", "CRITICAL_SHARE", "JSON_SCHEMA_VERSION", "KERNEL_ROWS",
    "NOT_USER_FRAME", "ONE_TIME_MAX_SEVERITY", "OVERHEAD_MAX_GPU_BUSY", "OVERHEAD_RATIO", "SEVERITY_ORDER",
    "TOP_FIX_MIN_SHARE", "UMBRELLA_RULES", "UMBRELLA_YIELD", "WARNING_SHARE", "WRONG_RESULTS_RULES",
    "Context", "Evidence", "Finding", "Impact", "Record", "RuleFailed", "Severity", "Steps", "Summary",
    "coverage_notices", "one_time_notices", "order_key", "record_fields", "severity_of", "step_ns",
    "steps_of", "top_fix", "top_indices", "user_stack", "verdict_notices", "verdict_of",
]
