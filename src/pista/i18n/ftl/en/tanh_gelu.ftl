## tanh-gelu: the text of its findings, in English
title = GELU's tanh formula runs as eight ops where one kernel does it

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The tanh approximation of GELU written out in eager ops, as transformers' `NewGELUActivation`
    (`activation_function="gelu_new"`: GPT-2, GPT-J, CodeGen, Phi...) and nanoGPT's old `new_gelu` do:
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))` dispatches eight ops (`aten::mul`,
    `aten::pow`, `aten::mul`, `aten::add`, `aten::mul`, `aten::tanh`, `aten::add`, `aten::mul`), eight
    kernels, for every MLP block of every step.

    Why:
    Each op is a host dispatch and a kernel launch, and each kernel one more pass over the activation;
    under autocast `pow` and `tanh` run in fp32, so the chain also casts. `F.gelu(x, approximate="tanh")`
    computes the same function in one kernel. Where the host is the limit (decoding, small batches) the
    eight dispatches are what the GPU waits for.

    Example:
    gpu/kv_flash (GPT-2 124M, batch-1 decoding, H200): 12 chains a token, 96 of its 248 kernels; the GPU
    idles 2.1 ms of the 17.2 ms token under their ops. gpu/gpt2_conv1d (training, bf16 autocast):
    6 chains a step in fp32.

    Impact:
    Per step, the GPU idle under the chains' ops (the host dispatching them while the GPU waits) times
    (1 - 1/8): one op instead of eight. The GPU time of the chains' kernels is not counted here (where it
    matters, unfused-elementwise reports the chain's passes over memory). gpu/kv_flash 1.8 ms a token
    (10.6% of the profiled 17.2 ms; measured unprofiled, gelu_pytorch_tanh saved 1.0-2.3 ms of 5.4-8.4,
    gpu/gelu_decode.py); gpu/gpt2_conv1d's six chains hold the GPU idle under 1% of its step: silent. overhead-bound and launch-bound leave this idle to this rule (`claimed_idle`). Under 1% of the
    step the rule is silent.

    Fix:
    `torch.nn.functional.gelu(x, approximate="tanh")` in place of the formula; in transformers, load the
    model with `activation_function="gelu_pytorch_tanh"` (`AutoConfig.from_pretrained(...,
    activation_function="gelu_pytorch_tanh")`), the same function in one kernel.

message = { $chains } times per step the tanh approximation of GELU is computed op by op{ $fp32 ->
        [yes] {" "}in fp32 (autocast runs pow and tanh in fp32)
       *[no] {""}
    }: { $ops } ops (aten::mul, aten::pow, aten::add, aten::tanh...) and their kernels ({ $kernel_us } of GPU
    time per step) where F.gelu(x, approximate='tanh') is one. The GPU idles { $idle_us } per step while the host
    dispatches them.
advice = Use torch.nn.functional.gelu(x, approximate='tanh'), the same function in one kernel; for a
    transformers model, set activation_function='gelu_pytorch_tanh' in its config (GPT-2's 'gelu_new' is
    this formula written out).
fix = GELU's tanh formula runs as { $ops } ops { $chains } times per step: use F.gelu(x, approximate='tanh')
    (transformers: activation_function='gelu_pytorch_tanh').
basis = the GPU idle under the chains' ops while the host dispatches them, times 1 - 1/{ $ops } (one op instead
    of the chain), per step; their kernels' GPU time is not counted
chain-op = op { $position } of a { $of }-op tanh-GELU chain
