"""straggler in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.straggler import Cause, LateCall, SlowStep, Straggler

TITLE = "Straggler: one rank keeps the others waiting"


def _others(r: Straggler) -> str:
    return f"the other {r.world - 1} rank(s)"


def message(r: Straggler) -> str:
    if r.cause == Cause.LATE:
        text = (f"Rank {r.rank} reaches its collectives {t(r.late_us or 0.0)} after the median of {_others(r)} "
                f"(median over {r.matched_collectives} matched collectives; its median step is "
                f"{t(r.step_us or 0.0)}): they wait {t(r.wait_us)} per step for it.")
    else:
        text = (f"Rank {r.rank}'s median step takes {t(r.step_us or 0.0)} against {t(r.others_step_us or 0.0)} on "
                f"{_others(r)}, {t(r.wait_us)} more per step.")
    if r.peers_exposed_us is not None and r.own_exposed_us is not None and r.peers_exposed_us > r.own_exposed_us:
        text += (f" The others wait in communication {t(r.peers_exposed_us)} per step (median), rank {r.rank} "
                 f"only {t(r.own_exposed_us)}.")
    if r.extra is not None:
        theirs = f"the others {t(r.extra.others_us)}" if r.extra.others_us >= 1.0 else "the others do not run it"
        text += f" Rank {r.rank} spends {t(r.extra.own_us)} per step in {r.extra.name}, {theirs}."
    return text


def advice(r: Straggler) -> str:
    if r.extra is not None and r.extra.device:
        if r.extra.others_us < 1.0:
            return (f"Rank {r.rank} runs {r.extra.name} ({t(r.extra.own_us)} per step) and the others do not: it "
                    "runs different kernels, so its settings differ (dtype, TF32 or autocast, a library version): "
                    "make them the same on every rank.")
        return (f"{r.extra.name} takes {t(r.extra.own_us)} per step on rank {r.rank} and {t(r.extra.others_us)} on "
                "the others: its inputs are bigger (uneven shards, longer sequences, padding) or its GPU is slower "
                "(clocks, throttling); balance the inputs or check the device.")
    if r.extra is not None:
        return (f"{r.extra.name} costs rank {r.rank} {t(r.extra.own_us - r.extra.others_us)} more per step than the "
                f"others: if it reads or prepares input, load in DataLoader workers (num_workers>0) or balance the "
                f"shards; if it logs, evaluates or checkpoints on rank {r.rank} only, do it outside the step or "
                "asynchronously; otherwise make it as cheap as on the other ranks.")
    if r.cause == Cause.LATE:
        return (f"No host region of rank {r.rank} explains its lateness: compare its inputs (shard sizes, sequence "
                "lengths) and its device (clocks, throttling, a noisy neighbour) with the others'; balance the "
                "work or move the slow host out of the job.")
    return (f"Rank {r.rank} runs its steps slower with no collective to wait in: compare its settings (precision, "
            "TF32, batch size), device and inputs with the other ranks' and align them.")


def fix(r: Straggler) -> str:
    if r.extra is not None and r.extra.device:
        return (f"rank {r.rank} spends {t(r.extra.own_us - r.extra.others_us)} more per step in {r.extra.name} than "
                f"the other ranks ({t(r.wait_us)} per step behind them): give it the same settings and inputs as "
                "theirs")
    if r.extra is not None:
        return (f"rank {r.rank} spends {t(r.extra.own_us - r.extra.others_us)} more per step in {r.extra.name} than "
                f"the other ranks, who wait {t(r.wait_us)} per step for it: take that work off the step on rank "
                f"{r.rank} or balance it")
    if r.cause == Cause.LATE:
        return (f"the other ranks wait {t(r.wait_us)} per step at their collectives for rank {r.rank}: find what "
                f"delays rank {r.rank} (inputs, device, host) and balance it")
    return (f"rank {r.rank}'s steps take {t(r.step_us or 0.0)} against {t(r.others_step_us or 0.0)} on the others: "
            f"align rank {r.rank}'s settings, device and inputs with theirs")


def basis(r: Straggler) -> str:
    if r.cause == Cause.LATE:
        return ("per step, how much later than the median other rank it calls its collectives (median over the "
                "step's collectives), averaged over the steps: the time the others wait for it")
    return "its median step less the other ranks' median step: what it would save running at their pace"


NOTES = {
    LateCall: lambda n: f"{t(n.late_us)} late (#{n.nth} of its name in the step)",
    SlowStep: lambda n: f"{t(n.dur_us - n.others_us)} longer than the other ranks' median step ({t(n.others_us)})",
}
