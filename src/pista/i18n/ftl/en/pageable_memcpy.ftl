## pageable-memcpy: the text of its findings, in English
title = Copies between the GPU and pageable host memory

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Host<->device copies from or into pageable (ordinary, unpinned) host memory: the GPU lane shows
    `Memcpy HtoD (Pageable -> Device)` or `Memcpy DtoH (Device -> Pageable)`, and the host's
    cudaMemcpyAsync lasts as long as the copy itself because it cannot return early. The rule groups
    the copies by the op that issued them (`aten::to`, `aten::copy_`) and the record_function region
    around it, and measures how long each kept the host blocked.

    Why:
    The DMA engine can only read pinned (page-locked) memory, so the driver stages a pageable buffer
    through a pinned bounce buffer chunk by chunk: the copy runs at a fraction of PCIe/NVLink-C2C
    speed, the "async" call blocks the host for its whole length, and it cannot overlap compute. A
    pageable copy is also stream-ordered: issued while kernels are still queued, it waits for them,
    so even a small one can block the host for milliseconds and drain the GPU's queue.

    Example:
    gpu/pageable_memcpy on an H200: a 64 MiB `tensor.to("cuda")` from pageable memory (`aten::to` in
    `pageable_copy`) takes 9.55 ms on the GPU (7.0 GB/s) and blocks the host 9.73 ms in cudaMemcpyAsync
    plus 15 µs in its stream sync; the same copy from pinned memory with `non_blocking=True` takes
    1.21 ms (55 GB/s) and returns to the host after 19.5 µs. gpu/gpu_idle_dataloader: the 2 MiB batch
    copy of `data_loading` blocks the host 264 µs per 15.4 ms step (its cudaMemcpyAsync and stream
    sync). The 64 MiB `.cpu()` read-back of gpu/pageable_memcpy (47.9 ms at 1.4 GB/s into pageable
    memory) is this rule's too: the copy blocks because its destination is pageable.

    Impact:
    Per step: the host time blocked in each pageable copy's runtime calls (the cudaMemcpyAsync and the
    stream sync of the same op) while the GPU computed nothing, capped by the GPU idle from the call's
    start until the next device work after it: a copy that waits behind queued kernels costs only the
    idle it leaves after it. An upper bound: a pinned copy still occupies the copy engine for
    bytes / pinned bandwidth (1.21 ms per 64 MiB on the H200). gpu/pageable_memcpy: 9.71 ms of a
    64.6 ms step (15%, warning); gpu/gpu_idle_dataloader: 264 µs of 15.4 ms (1.7%, info);
    gpu/pageable_behind_kernels, a 256 KiB copy issued behind 4 ms of queued GEMMs: the host blocks
    3.5 ms per step, the GPU computes through all but the 154 µs of idle it leaves after (3.7%, info).
    A read-back (DtoH) saves at most its staging, the copy's time beyond a pinned one's: the host needs the
    values, so with pinned memory it still waits for the work queued before the copy (foreign/hta_negq_rank0:
    30 read-backs of 8.6 KB a step, each blocking the host up to 146 ms behind TorchRec's all-to-all, were
    82% of the step; their staging is a few µs). Replayed, its calls keep waiting; an upload's stop.
    It used to be a warning for any copy of 1 MiB or more; bytes no longer decide. One copy, one
    finding: every copy to or from pageable memory is this rule's, with the stream sync of its op;
    host-sync keeps the syncs of ops that copy nothing pageable (`.item()` reads through a pinned
    staging buffer).

    Fix:
    Allocate host buffers pinned (`torch.empty(..., pin_memory=True)`, `tensor.pin_memory()`,
    `DataLoader(pin_memory=True)`) and copy with `non_blocking=True`; for read-backs, copy into a
    preallocated pinned tensor with `non_blocking=True` and wait on an event only when the value is used.

where = { $op }{ $in_region ->
    [yes] {" "}in '{ $region }'
   *[no] {""}
  }
where-item = { where }
saved = { $read_back ->
    [yes] { $saved_us } of it staging through pageable memory{ $why ->
            [yes] {" "}(a pinned read-back still waits for its copy and the work queued before it)
           *[no] {""}
        }
   *[no] { $saved_us } of it with the GPU computing nothing
  }
side = { $read_back ->
    [yes] into
   *[no] from
  }
group-item = { where }: { $copies } { $direction } { $one ->
        [yes] copy
       *[no] copies
    } { side } pageable memory ({ $mib } MiB), { $device_us } on the GPU at { $gb_s } GB/s{ $has_pinned ->
        [yes] {" "}(pinned { $direction } copies in this trace: { $pinned_gb_s } GB/s)
       *[no] {""}
    }; the host blocked { $blocked_us }, { saved }
message = { $groups }. Together { $total_us } per step, { $share }% of the step time.
change = { $change ->
    [read-back] copy into a preallocated pinned tensor (dst.copy_(src, non_blocking=True)) and wait on a CUDA event
        only where the values are used
    [loader] load in a DataLoader with pin_memory=True and copy with .to('cuda', non_blocking=True) (its pin-memory
        thread pins the batches beside the step; .pin_memory() on each batch in the loop allocates page-locked memory
        every step and can be slower than the pageable copy)
    [small] build the tensor on the GPU (torch.tensor(..., device='cuda')) or keep it in pinned memory and copy with
        non_blocking=True
   *[pin] keep the source in pinned memory (tensor.pin_memory() once, outside the loop) and copy with
        non_blocking=True; for a batch built anew each step, copy it into one preallocated pinned buffer
        (buf.copy_(batch)) or build it in DataLoader workers with pin_memory=True: .pin_memory() on each batch
        allocates page-locked memory every step and can be slower than the pageable copy
  }
advice = For { where }: { change }.{ $htod ->
        [yes] {" "}A pinned copy runs at full bus speed and returns to the host at once, so it overlaps the GPU's work
            instead of blocking the host.
       *[no] {""}
    }{ $has_others ->
        [yes] {" "}The same for { $others }.
       *[no] {""}
    }
fix = { where } copies { $mib_call } MiB per call { side } pageable memory, blocking the host { $step_blocked_us } per
    step ({ saved }): { change }.
basis = host blocked in the pageable copies' calls while the GPU computed nothing, up to the next device work (a
    read-back's at most its staging, the copy's time beyond a pinned one's), per step (upper bound: a pinned copy
    still occupies the copy engine)
pageable-copy = { $mib } MiB at { $gb_s } GB/s{ $has_pinned ->
        [yes] {" "}(pinned copies here: { $pinned_gb_s } GB/s)
       *[no] {""}
    }
blocked-copy-call = its op blocked the host { $blocked_us } (copy call and stream sync), { saved }
