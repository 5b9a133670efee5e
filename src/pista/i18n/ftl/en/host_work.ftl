## host-work: the text of its findings, in English
title = The host does its own work in the step while the GPU waits

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The host runs its own work between torch ops inside the steps while the GPU waits: NumPy or Python
    preprocessing (augmentation, normalisation, tokenization), Python loops over data, logging, I/O. In the
    trace it is time on the launching thread covered by no op and no runtime call, in stretches of
    HOST_WORK_GAP_NS or longer (the Python between two eager ops is 5-30 µs), with the GPU idle under it. With
    stacks the rule names the user's frames that ran there; without them, the ops on either side. A framework's
    own Python there (torch's wrappers, a Hugging Face model's forward) is dispatch and is left out, but a
    library's preprocessing is the user's work wherever its files live: Hugging Face's image and video
    processors, feature extractors, tokenizers and a pipeline's preprocess, with the PIL and NumPy work they call,
    named with the user's frame that called them (TraceLens' tl_h100_timesformer: the pipeline's preprocess,
    215 ms of a 383 ms step).

    Why:
    The GPU runs only what the host has launched. Dispatch gaps are per-op overhead (overhead-bound's); a
    stretch of host work in the middle of the step is a serial stage of its own: the GPU idles for all of it,
    and no fusing, compiling or CUDA graph recovers it. The work must move off the step's path: onto the GPU
    as tensor ops, into DataLoader workers, or out of the loop altogether (done once).

    Example:
    savings/h100/numpy_augment: random crops, flips and noise in NumPy for a batch of 64 images every step,
    outside any region and without stacks: the host spends most of the step between the optimizer's last op
    and the next forward's first. savings/h100/python_tokenize: texts tokenized in Python (a dict lookup per
    word) every step, with stacks: the rule names the `tokenize` frame.

    Impact:
    The step replayed with the host's work stretches taken out (they run elsewhere, or on the GPU in a few
    kernels): what moving the work off the step saves, at most.

    Fix:
    Do the work on the GPU with torch ops on the whole batch (crops by indexing, flips with torch.where,
    normalisation as tensor ops), in a DataLoader with workers (`num_workers>0, pin_memory=True,
    persistent_workers=True`) so it overlaps the GPU's step, or once before the loop (a tokenized,
    preprocessed dataset). Where stacks name the frame, that is the code to move. A Hugging Face processor: call
    it on a batch rather than a sample, in DataLoader workers (a pipeline takes a dataset with `batch_size` and
    `num_workers`), or use its fast torchvision-backed variant (`use_fast=True`), which can run on the GPU.

where = { $where ->
    [frames] in { $frames }
    [between] between { $before } and { $after }
    [after] after { $before }
    [before] before { $after }
   *[none] outside any op
  }
library = Hugging Face's preprocessing ({ $entry }{ $has_caller ->
    [yes] , called from { $caller }
   *[no] {""}
  })
message = Per step the launching thread spends { $work_us } in { $stretches } stretch(es) of its own work
    outside any torch op (the longest { $longest_us }), { where }; the GPU idles { $idle_us } of it. { $preprocess ->
        [yes] { $pre_us } of it is { library }: the inputs prepared on the host inside the step, not the model's
            dispatch of ops.
       *[no] That is Python or NumPy work (preprocessing, tokenizing, logging, I/O) in the step, not the
            dispatch of ops.
    }
advice = { $has_frames ->
        [yes] The code: { where }.
       *[no] Record the step with with_stack=True to see which Python code runs { where }.
    } { $preprocess ->
        [yes] { library } runs in the step while the GPU waits. Move it where it overlaps the GPU: in DataLoader
            workers (num_workers>0), or, for a pipeline, give it the inputs as a dataset with batch_size and
            num_workers; process a batch per call rather than one sample at a time; use the fast,
            torchvision-backed processor where the model has one (use_fast=True), which can also run on the GPU
            (device='cuda'). Compiling or graphing the model does not help here.
       *[no] Move the work off the step: do it on the GPU as torch ops on the whole batch, in a DataLoader with
            workers (num_workers>0, pin_memory=True) so it overlaps the GPU, or once before the loop (a
            preprocessed, tokenized dataset). Compiling or graphing the step does not help here.
    }
fix = { $preprocess ->
    [yes] { $who } runs Hugging Face's preprocessing { $pre_us } per step with the GPU idle: run it in
        DataLoader workers, a batch per call, or use the fast processor
   *[no] the host works { $idle_us } per step outside torch ops { where }: move it to the GPU or to DataLoader
        workers
  }
basis = the stretches of host work taken out of the step
stretch = { $dur_us } of host work, the GPU idle { $idle_us }{ $has_frame ->
    [yes] , in { $frame }
   *[no] {""}
  }
