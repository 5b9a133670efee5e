## cpu-tensor-creation: the text of its findings, in English
title = Tensors are made on the CPU in the step, then copied to the GPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Tensors created on the CPU inside the step and then copied to the GPU: random inputs (`torch.randn(shape)`
    then `.to("cuda")` or `.cuda()`), constants or index tensors (`torch.zeros`, `torch.arange`) built on the
    host every step. In the trace: a factory op (aten::randn, rand, randint, normal_, uniform_, zeros, ones,
    full, arange...) under which no kernel is launched and that holds host time, followed on the same thread
    by a copy op (aten::to, aten::_to_copy, aten::copy_) with a memcpy runtime call under it.

    Why:
    On the CPU the factory fills the tensor on one core (torch's CPU normal sampler: a few hundred MB/s), then
    a pageable copy moves it at PCIe speed with the host blocked; the GPU idles through both. Made on the GPU,
    the same tensor is one kernel of microseconds and no copy.

    Example:
    foreign/solangii_default (a public benchmark, its GPU records lost): 10 `torch.randn` of 363 ms each on the
    CPU (aten::normal_, 3.63 s of the 4.87 s window), each followed by `.to("cuda")`, whose cudaMemcpyAsync
    holds the host 86 ms; the model's own work under them is a square and a sum.

    Impact:
    Per step: the factory ops' host time and their copies' (the edit removes both from the replayed step: the
    tensor made on the GPU costs a kernel of microseconds, not counted).

    Fix:
    Pass the device to the factory: `torch.randn(shape, device="cuda")` (every factory takes `device=`), or
    build constant tensors once before the loop. Data that must come from the host (a dataset) belongs in
    DataLoader workers with `pin_memory=True` and `.to(device, non_blocking=True)`.

message = { $calls } call(s) of { $ops } run on the CPU (they launch no kernel) and their tensors are then copied to
    the GPU: { $create_us } of host time { $per_step ->
        [yes] per step
       *[no] in the window
    } making them and { $copy_us } copying them, with the GPU waiting.
advice = Make the tensors on the GPU: pass device='cuda' to the factory (torch.randn(shape, device='cuda'); every
    factory takes device=), or build constant tensors once before the loop. Data that must come from the host
    belongs in DataLoader workers with pin_memory=True and .to(device, non_blocking=True).
fix = { $ops } { $one_op ->
        [yes] makes its tensors
       *[no] make their tensors
    } on the CPU, then copies go to the GPU ({ $total_us }): pass device='cuda' to the factory.
basis = the factory calls' host time and their copies' removed from the replayed step (made on the GPU, the tensor
    is a kernel of microseconds, not counted)
made-on-cpu = made on the CPU in { $dur_us }, no kernel launched
copied-to-gpu = its copy to the GPU: { $dur_us } of host time
