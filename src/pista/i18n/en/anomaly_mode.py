"""anomaly-mode in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.anomaly_mode import AnomalyMode, CheckNote

TITLE = "Autograd's anomaly detection is on: every backward node checks its gradients for NaN"


def message(r: AnomalyMode) -> str:
    gpu = (f"; the GPU idles {t(r.idle_us_per_step)} per step under them (each read of the result syncs)"
           if r.idle_us_per_step is not None else "")
    return (f"The autograd engine checks the {r.gradients_checked_per_step:.0f} outputs of "
            f"{r.nodes_checked_per_step:.0f} backward nodes per step for NaN (aten::isnan, aten::_is_any_true, aten::item under each node): anomaly detection is on. The checks "
            f"take {t(r.checks_us_per_step)} of host time per step{gpu}{_forward(r)}.")


def _forward(r: AnomalyMode) -> str:
    if r.forward_tracebacks:
        return ("; the forward records a Python traceback in every op that builds an autograd node as well "
                "(set_detect_anomaly(True) for the whole run), which the impact counts")
    if r.idle_us_per_step is not None:
        return "; the forward runs outside anomaly mode (its ops show no traceback cost)"
    return ", and under set_detect_anomaly(True) the forward records a traceback for every autograd node as well"


def advice(r: AnomalyMode) -> str:
    return ("Anomaly detection is a debugging tool: remove torch.autograd.set_detect_anomaly(True) (or pass False) "
            "and any `with torch.autograd.detect_anomaly():` around the step. To catch a NaN, turn it on for the "
            "failing step only, or test the loss with torch.isfinite every N steps.")


def fix(r: AnomalyMode) -> str:
    return (f"Anomaly detection checks {r.nodes_checked_per_step:.0f} backward nodes per step for NaN: remove "
            "torch.autograd.set_detect_anomaly(True) / detect_anomaly() outside debugging.")


def basis(r: AnomalyMode) -> str:
    if r.idle_us_per_step is not None:
        return ("the GPU idle under the engine's NaN checks, per step; the tracebacks the forward records are not "
                "counted")
    return "the host time of the engine's NaN checks, per step; the tracebacks the forward records are not counted"


NOTES = {
    CheckNote: lambda n: f"a NaN check of {n.node}'s outputs",
}
