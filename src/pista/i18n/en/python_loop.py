"""python-loop in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.python_loop import Pass, PythonLoop

TITLE = "A Python loop runs the same ops once per sample or per model"
_WHAT = {"sample": "once per sample (each pass starts by indexing one element out of the batch)",
         "model": "once per model (the passes' results are stacked, concatenated or summed)"}


def _block(r: PythonLoop) -> str:
    names = list(dict.fromkeys(r.block))
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")


def _where(r: PythonLoop) -> str:
    return f" in {r.source}" if r.source else ""


def message(r: PythonLoop) -> str:
    return (f"The step repeats the same {len(r.block)} op(s) ({_block(r)}) {r.passes} times in a row{_where(r)}, "
            f"{_WHAT[r.kind]}: {t(r.host_us)} of host time per step from the second pass to the last, each pass "
            "dispatching every op again and launching its own small kernels.")


def advice(r: PythonLoop) -> str:
    if r.kind == "sample":
        return ("Call the ops once on the whole batch: F.cross_entropy(logits, y, reduction='none') then weight, mask or "
                "reduce the per-sample values; torch.vmap for a function written per sample. The batched call "
                "dispatches once and launches a few kernels that fill the GPU.")
    return ("Run the models as one batched call: params, buffers = torch.func.stack_module_state(models), then "
            "torch.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None)); or "
            "one module with a model dimension (torch.bmm, grouped convolutions). CUDA graphs would keep the "
            "per-model kernels; batching removes them.")


def fix(r: PythonLoop) -> str:
    how = "call it once on the whole batch" if r.kind == "sample" else "vmap the models (torch.func.stack_module_state)"
    return f"a Python loop repeats {_block(r)} {r.passes} times per step{_where(r)}: {how}"


def basis(r: PythonLoop) -> str:
    return "the loop's passes after the first, removed (host time, kernels, backward), the first doing all their work"


NOTES = {
    Pass: lambda n: f"pass {n.index} of the loop ({n.ops} op(s))",
}
