## ddp-broadcast-buffers: the text of its findings, in English
title = DDP broadcasts the model's buffers before every forward

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    DistributedDataParallel broadcasts the model's buffers from rank 0 at the start of every forward
    (`broadcast_buffers=True`, the default): it flattens them into one tensor per bucket
    (`aten::flatten_dense_tensors`), broadcasts it (`c10d::broadcast_`), unflattens it
    (`aten::unflatten_dense_tensors`) and copies each buffer back (`aten::copy_`), before the module's first
    op. For a convnet with BatchNorm that is three buffers a layer, every step.

    Why:
    The broadcast itself is small on the GPU, but the host dispatches an op per buffer on each side of it,
    and the module's forward starts only after the last copy: the GPU waits for all of it. The broadcast
    keeps the ranks' buffers identical; where they need no syncing it is pure overhead.

    Example:
    HTA's hta_nccl_data (ResNet-50, DDP over NCCL, 3 steps of ~222 ms): each DistributedDataParallel.forward
    spends 38 ms before its first conv2d (two flatten_dense_tensors, two broadcasts, two
    unflatten_dense_tensors of 15.3 and 7.3 ms, 159 copy_ of the BatchNorm buffers) with the GPU 0.3 ms busy:
    17% of the step, which overhead-bound showed only as one op name in its list.

    Impact:
    The steps replayed with the buffer sync's ops (and what they launch) taken out: what
    `broadcast_buffers=False` saves.

    Fix:
    `DistributedDataParallel(model, broadcast_buffers=False)` where the buffers need no syncing: no buffer
    changes in the forward (no BatchNorm in training mode, no running statistics), or every rank computes
    them alike (SyncBatchNorm: `nn.SyncBatchNorm.convert_sync_batchnorm(model)` averages the batch
    statistics over the ranks, so their running statistics agree). With plain BatchNorm training, each rank's
    running statistics then follow its own data: acceptable where one rank evaluates and saves, or broadcast
    them yourself now and then (every N steps, before evaluating or saving).

message = Each DistributedDataParallel.forward ({ $calls } in { $steps } step(s)) first syncs the module's buffers
    from rank 0: { $broadcasts } broadcast(s) of them flattened, then { $copies } copies back, { $sync_us } per step
    before the module's first op, the GPU idle { $idle_us } of it. That is broadcast_buffers=True, the
    default.{ $buffers ->
        [sync-batch-norm] {" "}The model runs SyncBatchNorm: every rank computes the same statistics, so the buffers
            agree without it.
        [batch-norm] {" "}The model runs BatchNorm, whose running statistics change every forward: without the
            broadcast each rank's statistics follow its own data.
       *[none] {" "}No op in the steps updates a buffer in the forward (no BatchNorm): the broadcast re-sends the
            values every rank already has.
    }
advice = { $buffers ->
    [batch-norm] broadcast_buffers=False removes it, and is safe only where the ranks' BatchNorm running statistics
        may differ: one rank evaluates and saves the model, or you broadcast the buffers yourself every N steps and
        before evaluating or saving. Or convert the BatchNorm layers to SyncBatchNorm
        (nn.SyncBatchNorm.convert_sync_batchnorm(model), an all-reduce of the batch statistics per layer) so every
        rank computes the same statistics, then turn the broadcast off. Keep the default where every rank evaluates
        with its own copy and the copies must match.
   *[other] Construct DDP with broadcast_buffers=False (DistributedDataParallel(model, ..., broadcast_buffers=False)):
        the buffers stay the same on every rank without it.
  }
fix = DistributedDataParallel.forward syncs { $copies } buffers, { $idle_us } per step with the GPU idle:
    broadcast_buffers=False{ $buffers ->
        [batch-norm] {" "}where the ranks' BatchNorm statistics may differ (or with SyncBatchNorm)
       *[other] {""}
    }
basis = the buffer sync's host time with the GPU idle, from its first op to its last copy, per step
sync-note = the buffer sync: { $sync_us }, the GPU idle { $idle_us }, { $copies } copies back
