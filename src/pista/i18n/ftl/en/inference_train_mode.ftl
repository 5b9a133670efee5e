## inference-train-mode: the text of its findings, in English
title = Inference runs with the model in train(): dropout and batch norm act as in training
severity-exception = at least a warning: dropout and training-mode batch norm make inference outputs wrong; info without ProfilerStep markers, where a training forward profiled alone looks the same

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Inference with the model left in training mode (`model.train()`, the default after building it, or
    after a training loop with no `model.eval()`): in steps that run no backward, dropout still drops
    (`aten::dropout` calls `aten::native_dropout`, its kernels run) and batch norm normalises with the
    batch's own statistics and updates its running ones (`aten::batch_norm` with training=True, its
    statistics kernels run).

    Why:
    The outputs are wrong, not only slower: dropout makes them random, and batch norm makes each sample's
    output depend on the rest of its batch while it overwrites the running mean and variance the model
    learnt. `torch.inference_mode()` and `torch.no_grad()` do not change it; only `model.eval()` does. The
    training-only kernels cost GPU time besides.

    Example:
    gpu/resnet50_train (ResNet-50 bf16, batch 32, under torch.inference_mode(), H200): 53 batch norms a
    step in training mode, their statistics kernels 1.8 ms of GPU time a step (the eval twin
    gpu/resnet50_nograd runs none); unprofiled (gpu/train_time.py) eval() took the step from 6.22 to 4.84
    ms. gpu/gpt2_decode_train (GPT-2 decoding): 25 dropouts and 12 attention dropouts a token; eval() took
    the token from 7.24 to 6.57 ms with SDPA pinned to flash, but unpinned, dropout_p=0 lets SDPA pick
    cuDNN attention, a graph per KV length (gpu/gpt2_decode_nograd, cudnn-setup).

    Impact:
    The GPU time of the training-only kernels (the active dropouts' kernels, batch norm's statistics and
    running-stat updates), times the busy share, plus the per-op GPU idle under the dropouts that drop
    (their dispatch, where the host is the limit; overhead-bound, launch-bound and many-calls leave it
    to this rule, `claimed_idle`): a lower bound (cuDNN's training batch-norm kernel does both jobs in
    one, not counted). gpu/resnet50_train 1.2 ms, gpu/gpt2_decode_train 1.5 ms a step (measured
    unprofiled: 1.34 and 0.66 ms). On a CPU-only trace: the dropouts' host time, and 60% of the training batch
    norms' (eval's running statistics skip the statistics pass: 63-94% less, measured on a CPU). The wrong outputs are why it is at least a warning, whatever it costs,
    and comes first (SEVERITY_EXCEPTION); without ProfilerStep markers it is info with that condition
    said (a training forward profiled alone, its backward outside the window, looks the same).

    Fix:
    Call `model.eval()` before the inference loop (and `model.train()` again before training resumes).

and = {" "}and{" "}
dropouts-item = { $n } dropouts a step still drop (their outputs are random)
attention-item = { $n } scaled_dot_product_attention calls a step drop attention weights (dropout_p={ $p })
batch-norms-item = { $n } batch norms a step normalise with the batch's own statistics and overwrite their running
    mean and variance
idle-dropouts-item = the dropouts
idle-counters-item = { $n } num_batches_tracked updates
dropout-module-item = dropout
batch-norm-module-item = batch-norm statistics
message = { $lead ->
    [window] The trace holds no ProfilerStep and no backward (if the program trains and its backward ran outside the
        profiled window, this does not apply)
    [all] No step runs a backward
   *[some] { $steps } of the { $of_steps } steps run no backward
  }, yet the model is in training mode: { $what }. { $has_steps ->
    [yes] The outputs are wrong, not only slower.
   *[no] If this window is inference, its outputs are wrong, not only slower; nothing in it says which.
  } { $cpu ->
    [yes] On the CPU, eval() saves { $cpu_us } a step of their time (running statistics skip batch norm's statistics
        pass, about { $bn_saving }% of its time; a dropout in eval does nothing)
   *[no] The training-only kernels take { $kernel_us } of GPU time a step{ $idle ->
        [yes] , and the GPU idles { $idle_us } a step while { $dispatched } dispatch
       *[no] {""}
      }
  }.
advice = Call model.eval() before the inference loop (and model.train() before training resumes);
    torch.inference_mode() and torch.no_grad() do not switch dropout or batch norm off.{ $sdpa ->
        [yes] {" "}Once eval() sets dropout_p to 0, scaled_dot_product_attention may pick cuDNN attention, which
            builds a graph for every new sequence length (cudnn-setup): pin it to flash/efficient with
            torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]).
       *[no] {""}
    }
fix = the model runs inference in train() mode ({ $modules }): call model.eval(){ $grad ->
        [yes] {" "}and run it under torch.inference_mode() (inference-grad-mode)
       *[no] {""}
    } first{ $sdpa ->
        [yes] , and pin SDPA to flash/efficient (sdpa_kernel): with dropout_p=0 it may pick cuDNN attention
       *[no] {""}
    }.
basis = { $cpu ->
    [yes] the CPU time of the dropouts that drop, and { $bn_saving }% of the training batch norms' (measured on a
        CPU: eval's batch norm takes 63-94% less){ $has_steps ->
            [yes] ; at least a warning, and first, as the outputs are wrong
           *[no] ; information only: without steps the window may be a training forward
        }
   *[no] { basis-gpu }
  }
basis-gpu = { $gpu_time ->
    [no] the training-only work takes no GPU time here: the finding is for the outputs, which train mode makes
        wrong{ $has_steps ->
            [yes] {""}
           *[no] {" "}if this window is inference
        }
   *[yes] the GPU time of the kernels only training mode runs (dropout's, batch norm's statistics), times the
        { $busy }% of the window the GPU is busy, plus the GPU idle while the dropouts and batch norm's
        num_batches_tracked updates dispatch{ $has_steps ->
            [yes] ; at least a warning, and first, as the outputs are wrong
           *[no] ; information only: without steps the window may be a training forward
        }
  }
training-op = { $kind ->
    [dropout] dropout that drops (train mode)
    [attention] attention with dropout_p > 0 (train mode)
   *[other] batch norm in training mode
  }
