"""El texto en español de los avisos tipados de pista: una regla que falló con la traza (pista.isolation)."""

from __future__ import annotations

from pista.isolation import RuleFailed


def rule_failed(r: RuleFailed) -> str:
    if r.stage == "replay":
        return (f"no se pudo reproducir el arreglo de la regla {r.rule} con esta traza ({r.error}): sus hallazgos "
                "conservan la estimación de la propia regla; los demás hallazgos se mantienen. Si puedes, repórtalo "
                "junto con la traza")
    return (f"la regla {r.rule} falló con esta traza ({r.error}) y queda fuera; los hallazgos de las demás reglas "
            "se mantienen. Si puedes, repórtalo junto con la traza")


NOTES = {RuleFailed: rule_failed}
