## graph-break: the text of its findings, in English
title = torch.compile's graph breaks: each call runs as several graphs with Python between them

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A torch.compile'd function whose graph Dynamo breaks: each call runs as several compiled graphs with
    Python between them. In the trace a top-level `Torch-Compiled Region: F/C` call holds the regions of
    other frames (Dynamo's resume functions, compiled from the break on) and two or more
    `## Call CompiledFxGraph` calls; what runs between the graphs says what broke it: `aten::is_nonzero`
    (a Python `if` on a tensor), `aten::item` (a value read in Python: `.item()`, `float(t)`,
    `.tolist()`), or no op at all (Python Dynamo does not trace: `print`, a call into a library it does
    not know).

    Why:
    Each break ends one graph and starts another: one more guard check, region and wrapper per call,
    fusion stops at the break, and a value read syncs the host with the GPU, so the queue drains and the
    GPU waits while Python runs the resume function and launches the next graph. CUDA graphs
    (`mode="reduce-overhead"`) cannot span a break either.

    Example:
    gpu/graph_break_two (CPU, one thread, a 3-Linear block 256 wide at batch 16): `if h.abs().mean() > 10:`
    and `self.last = h.mean().item()` break the forward twice, three graphs a call, 31 µs of host time
    between graphs a break as profiled; unprofiled 165.5 µs a call against 130.6 µs for its twin
    (torch.where, no read; gpu/graph_break_whole, one graph): 35 µs, 27%. One break (graph_break_branch,
    graph_break_item): 17-19 µs of 132 µs.

    Impact:
    Per step, the time between each broken call's graphs (from the end of one `## Call CompiledFxGraph`
    to the start of the next): with a GPU, the GPU idle in it (the sync's drain and the resume's Python);
    CPU-only, its host time over the profiler's inflation of host time (PROFILER_HOST_INFLATION:
    graph_break_two's 31 µs a break as profiled, 17.5 µs unprofiled). An upper bound: the work between
    the graphs (the branch's own reduction) stays. host-sync leaves the syncs in these gaps to this rule.
    Silent under 1% of the step; the compiled fixtures without a break (seed_mm4096_compile,
    capture_mlp_compile, series_mlp_compile, the recompiling ones) hold no region inside another.

    Fix:
    Find the break with `TORCH_LOGS="graph_breaks"` (or `torch._dynamo.explain(fn)(*args)`);
    `torch.compile(fullgraph=True)` turns any break into an error. A branch on a tensor: `torch.where` or
    `torch.cond`; a value read: keep it a tensor and read it every N steps outside the compiled function
    (or `torch._dynamo.config.capture_scalar_outputs = True`); print and logging: move them out of the
    compiled function.

breaks = { $once ->
    [yes] once
   *[no] { $breaks } times
  }
cause-item = { $cause ->
    [branch] a Python if on a tensor's value (aten::is_nonzero: bool(tensor))
    [read] a tensor's value read in Python (aten::item: .item(), float(t), .tolist())
   *[python] Python Dynamo does not trace (no op runs there: print, logging, a call into another library)
  }
cause-short = { $cause ->
    [branch] a Python if on a tensor's value
    [read] a tensor's value read in Python
   *[python] Python Dynamo does not trace
  }
fix-item = { $cause ->
    [branch] compute both sides and pick with torch.where (or torch.cond)
    [read] keep the value a tensor and read it every N steps outside the compiled function
   *[python] move the print, logging or foreign call out of the compiled function
  }
message = The compiled function (Dynamo frame { $frame }) runs as { $graphs } graphs a call in its
    { $calls } calls: Dynamo broke its graph { breaks } a call. Between the graphs: { $causes }{ $has_ops ->
        [yes] {" "}({ $ops })
       *[no] {""}
    }. The host spends { $gap_us } per step between the graphs{ $gpu ->
        [yes] , { $idle_us } of it with the GPU idle
       *[no] {""}
    }; each break also stops fusion there, and CUDA graphs cannot span it.
advice = Find each break with TORCH_LOGS="graph_breaks" (or torch._dynamo.explain(fn)(*args)), then
    { $fixes }; for a value read, torch._dynamo.config.capture_scalar_outputs = True also keeps it in the
    graph. torch.compile(fullgraph=True) turns any break into an error, so none comes back.
fix = torch.compile's graph breaks { breaks } a call ({ cause-short }): find it with TORCH_LOGS="graph_breaks"
    and { fix-item }; fullgraph=True makes a break an error.
basis = { $gpu ->
    [yes] the GPU idle between each broken call's graphs, per step; an upper bound (the code between them
        stays)
   *[no] the host time between each broken call's graphs, per step, over { $inflation } for the
        profiler's inflation of host time; an upper bound (the code between them stays)
  }
call-note = a compiled call run as { $graphs } graphs
gap-note = the next graph, after { $gap_us } of { $has_ops ->
    [yes] { $ops }
   *[no] Python alone
  }
