## python-loop: the text of its findings, in English
title = A Python loop runs the same ops once per sample or per model

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A Python loop in the step that runs the same ops once per sample or once per model: the step's top-level
    ops repeat as one block many times in a row. Two kinds are told apart by what the trace shows:
    - **per sample**: each pass starts by indexing one element out of a batch (`aten::select`/`aten::slice`/
      `aten::narrow`, from `x[i]` or `x[i:i+1]`), or one `aten::unbind` comes right before the first pass
      (`for row in x`): a loss, a metric or an augmentation computed sample by sample. Passes need not be
      the same ops: after an `aten::unbind` of a [N, ...] batch, the ops that take one row mark the passes
      where each starts with the same ops up to that one (`for img in batch:` with a random flip in some
      passes, savings/h100/loop_per_sample_augment);
    - **per model**: the passes' results are gathered by `aten::stack`/`aten::cat` (`torch.stack([m(x) {"for m"}
      in models])`), or summed (`sum(m(x) {"for m in models"})`, a loss summed over the members): an ensemble,
      or heads, run one after the other. Where the trace has shapes, 3 passes are enough when every pass
      starts from the same input shape and, summed, each ends adding a result of another shape than that
      input (an ensemble of 5 is common; a model's residual blocks add what has their input's shape).
    A model's own layers also repeat, but neither start with an index nor end in a stack: they are the
    model's structure, not a loop to remove (healthy_gpt_bf16's blocks stay quiet).

    Why:
    Each pass dispatches every op again: ~5-20 µs of host time per op and one tiny kernel each, so the GPU
    waits on the host (launch-bound, overhead-bound are this loop's symptoms). One batched call does the same
    work in one dispatch and a few kernels that use the whole GPU.

    Example:
    savings/h100/loop_per_sample_loss: a weighted loss summed sample by sample over a batch of 32 (`loss =
    loss + w[i] * F.cross_entropy(logits[i:i+1], y[i:i+1])`): 32 passes of select, slice, slice,
    cross_entropy, mul, add a step; the batched `cross_entropy(reduction="none")` twin is 84% faster
    unprofiled. savings/h100/loop_ensemble: 16 MLPs run one by one and stacked; `torch.func.
    stack_module_state` + `torch.vmap` is 74% faster. loop_ensemble_cnn: 5 CNNs averaged with `sum(m(x) {"for m"}
    in models) / n`; loop_ensemble_train: the loss of 4 MLPs summed member by member, against one module
    holding them as stacked weights.

    Impact:
    The step replayed with one pass kept and batched: the other passes' host time goes (their ops, the
    Python between them) with their backward nodes; the kept pass's kernels grow by the others' work less
    a tiny kernel's fixed cost each (KERNEL_FLOOR_NS), a batched kernel doing k passes' bytes and FLOPs.

    Fix:
    Per sample: call the op on the whole batch (`F.cross_entropy(logits, y, reduction="none")` then weight,
    mask or reduce; `torch.vmap` for a function written per sample). Per model: stack the models' weights
    and vmap one functional call (`params, buffers = torch.func.stack_module_state(models)`, `torch.vmap(
    lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))`), or one module
    with a batch dimension over the models (`torch.bmm`, grouped convolutions).

where = { $has_source ->
    [yes] {" "}in { $source }
   *[no] {""}
  }
message = The step repeats the same { $ops } op(s) ({ $block }) { $passes } times in a row{ where }, { $kind ->
        [sample] once per sample (each pass starts by indexing one element out of the batch)
        [slices] once per piece of a tensor split before the loop (the passes' results are stacked or concatenated)
       *[model] once per model (the passes' results are stacked, concatenated or summed)
    }{ $has_others ->
        [no] {""}
       *[yes] , and { $others } other loop(s) like it in the step
    }: { $host_us } of host time per step from the second pass to the last, each pass dispatching every op again
    and launching its own small kernels.
advice = { $kind ->
    [sample] Call the ops once on the whole batch: { $example ->
            [loss] F.cross_entropy(logits, y, reduction='none') then weight, mask or reduce the per-sample values
            [readback] reduce on the GPU and read the result once (x.sum().item(), not a sum of x[i].item() or
                x[i].cpu()), or copy the whole tensor once (x.cpu(), x.tolist())
           *[other] pass the whole batch (the op on x, not on x[i] in a loop)
        }; torch.vmap for a function written per sample. The batched call dispatches once and launches a few
        kernels that fill the GPU.
    [slices] Run the ops once on the whole tensor instead of on its split pieces: view it with the pieces as a
        leading dimension (x.view(k, ...), x.unflatten(...)) and call each op once; normalisations, softmax and
        elementwise ops act on the trailing dimensions, so one call does every piece, and the stack after the loop
        goes.
   *[model] Run the models as one batched call: params, buffers = torch.func.stack_module_state(models), then
        torch.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None)); or one
        module with a model dimension (torch.bmm, grouped convolutions). CUDA graphs would keep the per-model
        kernels; batching removes them.
  }
fix = a Python loop repeats { $block } { $passes } times per step{ where }: { $kind ->
        [sample] { $example ->
            [readback] reduce on the GPU and read the result back once (x.sum().item())
           *[other] call it once on the whole batch
        }
        [slices] call it once on the unsplit tensor
       *[model] vmap the models (torch.func.stack_module_state)
    }
basis = the loop's passes after the first, removed (host time, kernels, backward), the first doing all their work
pass = pass { $index } of the loop ({ $ops } op(s))
