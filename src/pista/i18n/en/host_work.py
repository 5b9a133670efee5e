"""host-work in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.host_work import HostWork, Stretch

TITLE = "The host does its own work in the step while the GPU waits"


def _where(r: HostWork) -> str:
    if r.frames:
        return "in " + ", ".join(f"{name} ({t(us)})" for name, us in r.frames)
    before, after = r.between
    if before and after:
        return f"between {before} and {after}"
    return f"after {before}" if before else (f"before {after}" if after else "outside any op")


def message(r: HostWork) -> str:
    return (f"Per step the launching thread spends {t(r.work_us)} in {r.stretches} stretch(es) of its own work "
            f"outside any torch op (the longest {t(r.longest_us)}), {_where(r)}; the GPU idles {t(r.idle_us)} of "
            "it. That is Python or NumPy work (preprocessing, tokenizing, logging, I/O) in the step, not the "
            "dispatch of ops.")


def advice(r: HostWork) -> str:
    code = f"The code: {_where(r)}. " if r.frames else ("Record the step with with_stack=True to see which "
                                                          f"Python code runs {_where(r)}. ")
    return (code + "Move the work off the step: do it on the GPU as torch ops on the whole batch, in a "
            "DataLoader with workers (num_workers>0, pin_memory=True) so it overlaps the GPU, or once before "
            "the loop (a preprocessed, tokenized dataset). Compiling or graphing the step does not help here.")


def fix(r: HostWork) -> str:
    return f"the host works {t(r.idle_us)} per step outside torch ops {_where(r)}: move it to the GPU or to DataLoader workers"


def basis(r: HostWork) -> str:
    return "the stretches of host work taken out of the step"


NOTES = {
    Stretch: lambda n: f"{t(n.dur_us)} of host work, the GPU idle {t(n.idle_us)}" + (f", in {n.frame}" if n.frame else ""),
}
