"""host-work in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.host_work import HostWork, Preprocess, Stretch

TITLE = "The host does its own work in the step while the GPU waits"


def _where(r: HostWork) -> str:
    if r.frames:
        return "in " + ", ".join(f"{name} ({t(us)})" for name, us in r.frames)
    before, after = r.between
    if before and after:
        return f"between {before} and {after}"
    return f"after {before}" if before else (f"before {after}" if after else "outside any op")


def _library(p: Preprocess) -> str:
    caller = f", called from {p.caller}" if p.caller else ""
    return f"Hugging Face's preprocessing ({p.entry}{caller})"


def message(r: HostWork) -> str:
    text = (f"Per step the launching thread spends {t(r.work_us)} in {r.stretches} stretch(es) of its own work "
            f"outside any torch op (the longest {t(r.longest_us)}), {_where(r)}; the GPU idles {t(r.idle_us)} of it. ")
    if r.preprocess:
        return text + (f"{t(r.preprocess.us)} of it is {_library(r.preprocess)}: the inputs prepared on the host "
                       "inside the step, not the model's dispatch of ops.")
    return text + ("That is Python or NumPy work (preprocessing, tokenizing, logging, I/O) in the step, not the "
                   "dispatch of ops.")


def advice(r: HostWork) -> str:
    code = f"The code: {_where(r)}. " if r.frames else ("Record the step with with_stack=True to see which "
                                                          f"Python code runs {_where(r)}. ")
    if r.preprocess:
        return (code + f"{_library(r.preprocess)} runs in the step while the GPU waits. Move it where it overlaps "
                "the GPU: in DataLoader workers (num_workers>0), or, for a pipeline, give it the inputs as a dataset "
                "with batch_size and num_workers; process a batch per call rather than one sample at a time; use the "
                "fast, torchvision-backed processor where the model has one (use_fast=True), which can also run on "
                "the GPU (device='cuda'). Compiling or graphing the model does not help here.")
    return (code + "Move the work off the step: do it on the GPU as torch ops on the whole batch, in a "
            "DataLoader with workers (num_workers>0, pin_memory=True) so it overlaps the GPU, or once before "
            "the loop (a preprocessed, tokenized dataset). Compiling or graphing the step does not help here.")


def fix(r: HostWork) -> str:
    if r.preprocess:
        who = r.preprocess.caller or r.preprocess.entry
        return (f"{who} runs Hugging Face's preprocessing {t(r.preprocess.us)} per step with the GPU idle: run it in "
                "DataLoader workers, a batch per call, or use the fast processor")
    return f"the host works {t(r.idle_us)} per step outside torch ops {_where(r)}: move it to the GPU or to DataLoader workers"


def basis(r: HostWork) -> str:
    return "the stretches of host work taken out of the step"


NOTES = {
    Stretch: lambda n: f"{t(n.dur_us)} of host work, the GPU idle {t(n.idle_us)}" + (f", in {n.frame}" if n.frame else ""),
}
