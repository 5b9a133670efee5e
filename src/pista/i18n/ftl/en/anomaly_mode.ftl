## anomaly-mode: the text of its findings, in English
title = Autograd's anomaly detection is on: every backward node checks its gradients for NaN

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Autograd's anomaly detection left on (`torch.autograd.set_detect_anomaly(True)` after a NaN hunt, or
    a step under `with torch.autograd.detect_anomaly():`). In the trace every backward node
    (`autograd::engine::evaluate_function: ...`) ends with the engine's own checks of its outputs:
    `aten::isnan`, `aten::_is_any_true` (or `aten::any`) and `aten::item`, directly under the node.

    Why:
    Anomaly mode makes the engine test every gradient it computes for NaN, one pass over each gradient
    and a value read back to Python per node; on a GPU each read is a sync that drains the queue. In the
    forward it also records a Python traceback for every autograd node. It is a debugging tool: with it
    on, a step costs a third more.

    Example:
    gpu/anomaly_cnn_on (CPU, one thread, a 3-conv CNN on 28x28 images at batch 64, SGD): 102 checks a
    step, 5.5 ms of a 32.6 ms profiled step; unprofiled 31.5 against 23.3 ms a step for its twin
    (gpu/anomaly_cnn_off): 8.4 ms, 27%. gpu/anomaly_mlp_on (4 Linear layers 512 wide, Adam, under
    `detect_anomaly()`): 75 checks, 2.7 ms of 14.9 ms; unprofiled 13.7 against 9.1 ms (4.5 ms, 33%).

    Impact:
    Per step, the checks' time: CPU-only, their host time; with a GPU, the GPU idle under them (the
    reads' syncs drain the queue). The tracebacks the forward records are not counted, so it is below
    what turning the mode off saves (the twins: 5.5 of 8.4 ms, 2.7 of 4.5 ms); host-sync leaves these
    reads to this rule. Silent under 1% of the step and on every trace without the checks. Replayed (the
    default, pista.engine), the edit removes the checks and, on a GPU trace whose forward node-building ops keep
    a median self time of FORWARD_TRACEBACK_SELF_NS or more (set_detect_anomaly(True) for the whole run), that
    self time down to TRACEBACK_SELF_KEEP: savings/h100/anomaly_global 64.9% predicted against 76.5% measured;
    anomaly_ctx, anomaly detection around backward() only, 40.0% against 48.2%.

    Fix:
    Turn it off outside debugging: remove `torch.autograd.set_detect_anomaly(True)` (or pass False), or
    the `with torch.autograd.detect_anomaly():` block; to find a NaN, turn it on for the failing step
    only, or check the loss with `torch.isfinite` every N steps.

message = The autograd engine checks the { $gradients } outputs of { $nodes } backward nodes per step for NaN
    (aten::isnan, aten::_is_any_true, aten::item under each node): anomaly detection is on. The checks take
    { $checks_us } of host time per step{ $gpu ->
        [yes] ; the GPU idles { $idle_us } per step under them (each read of the result syncs)
       *[no] {""}
    }{ $forward ->
        [tracebacks] ; the forward records a Python traceback in every op that builds an autograd node as well
            (set_detect_anomaly(True) for the whole run), which the impact counts
        [outside] ; the forward runs outside anomaly mode (its ops show no traceback cost)
       *[unknown] , and under set_detect_anomaly(True) the forward records a traceback for every autograd node as
            well
    }.
advice = Anomaly detection is a debugging tool: remove torch.autograd.set_detect_anomaly(True) (or pass False) and any
    `with torch.autograd.detect_anomaly():` around the step. To catch a NaN, turn it on for the failing step only, or
    test the loss with torch.isfinite every N steps.
fix = Anomaly detection checks { $nodes } backward nodes per step for NaN: remove
    torch.autograd.set_detect_anomaly(True) / detect_anomaly() outside debugging.
basis = { $gpu ->
    [yes] the GPU idle under the engine's NaN checks, per step; the tracebacks the forward records are not counted
   *[no] the host time of the engine's NaN checks, per step; the tracebacks the forward records are not counted
  }
check-note = a NaN check of { $node }'s outputs
