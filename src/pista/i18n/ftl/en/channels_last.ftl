## channels-last: the text of its findings, in English
title = A convnet runs in NCHW: cuDNN transposes around each convolution

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A convolutional network that runs in PyTorch's default NCHW memory layout on a GPU whose tensor-core
    convolutions want NHWC: cuDNN converts each convolution's input and output (`nchwToNhwcKernel`,
    `nhwcToNchwKernel`; cuDNN 9's `convertTensor_kernel`), and the layers around the convolutions take their NCHW kernels, several times
    slower than their channels_last ones: batch norm (`batch_norm_collect_statistics_kernel`,
    `batch_norm_backward_kernel`, cuDNN's `bn_fw_tr_1C11_kernel_NCHW`...), pooling (`max_pool_*_nchw`)
    and depthwise convolutions (`conv_depthwise2d_*`, PyTorch's own NCHW kernels).

    Why:
    Tensor cores read the channels of a pixel together; an NCHW tensor has them a plane apart, so cuDNN
    transposes around every convolution, forward and backward, and the normalization kernels stride
    across planes. `model.to(memory_format=torch.channels_last)` and the same for the input keep the
    activations NHWC from end to end: the transposes go, and the per-channel kernels read contiguously.

    Example:
    The H200 twins gpu/layout_r50_nchw_bf16 and gpu/layout_r50_cl_bf16 (torchvision ResNet-50 training,
    batch 64 at 224², bf16 autocast, synthetic data on the GPU): NCHW spends 3.3 ms per step in cuDNN's
    transposes and 14.4 ms in batch-norm kernels, channels_last none and 6.4 ms; the GPU time per step
    falls from 27.5 to 15.2 ms. Unprofiled (median of 30 steps): 31.5 -> 24.8 ms in bf16, 33.0 -> 26.2 ms
    in fp32; MobileNetV3-Large (batch 128) 52.1 -> 33.4 ms in bf16, its depthwise convolutions and batch
    norm 42.7 ms of GPU time per step in NCHW (gpu/layout_mb_nchw_bf16) against about 10 ms.

    Impact:
    Per step: the transposes' time, plus each NCHW-path kernel's time times what channels_last does
    not keep of it (the twins: batch norm keeps 0.44 of its time, depthwise convolutions 0.30, pooling
    0.86), times the share of the window the GPU is busy (GPU time saved shortens a host-bound step
    only in part). gpu/layout_r50_nchw_bf16: 11.5 ms of GPU time (the twins differ by 12.3), 57% busy
    (profiled with record_shapes), 6.6 ms of the 49.5 ms profiled step (13%; unprofiled the step saves
    6.7 ms, 21%); gpu/layout_r50_nchw_fp32: 9.6 ms, 81% busy, 7.7 ms of 36.7 (21%; unprofiled the fp32
    step saves 6.8 ms, 21%); gpu/layout_mb_nchw_bf16 26.4 ms of GPU time (the twins differ by 33.6), 87%
    busy, 23.1 ms of the 52.4 ms step (44%; unprofiled 18.7 ms, 36%). A channels_last model fed an NCHW input converts once
    per step (gpu/multiscale_plain: 20 µs): under 1% of the step the rule is silent.

    Fix:
    `model = model.to(memory_format=torch.channels_last)` once, and
    `x = x.to(memory_format=torch.channels_last)` for each batch (or in the DataLoader's collate);
    under torch.compile the same. Layers that do not support channels_last fall back to NCHW by
    themselves, so the change is safe to try.

message = The convolutions ({ $conv_share }% of the GPU time) run on NCHW tensors, and the NCHW path costs
    { $kernel_us } of GPU time per step ({ $gpu_share }%): { $kinds }. In channels_last the transposes go and
    the rest runs on faster kernels: about { $saved_us } less GPU time per step.
kind-item = { $kind } { $us } ({ $calls } kernels, e.g. { $kernel })
advice = Convert the model and its input to channels_last: model = model.to(memory_format=torch.channels_last)
    once, and x = x.to(memory_format=torch.channels_last) for each batch (or in the DataLoader's collate
    function). cuDNN then runs the convolutions on NHWC tensors directly, and batch norm, pooling and depthwise
    convolutions take their channels_last kernels.
fix = The model runs in NCHW: cuDNN transposes around its convolutions and { $kernel_us } of NCHW kernels run
    per step: convert the model and its input with .to(memory_format=torch.channels_last).
basis = the transposes' time plus each NCHW kernel's time times what channels_last does not keep of it (the
    H200 twins' ratios) ({ $saved_us } of GPU time { $per ->
        [step] per step
       *[window] over the window
    }), times the { $busy }% of the window the GPU is busy: GPU time saved shortens the step only where the
    GPU is the limit
nchw-note = NCHW path: { $kind }
