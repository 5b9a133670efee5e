## cpu-threads: the text of its findings, in English
title = torch uses fewer CPU threads than the cores it may use

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    On a CPU-only trace, torch ran with fewer intra-op threads than the cores the process may use
    (`torch.get_num_threads()` below `len(os.sched_getaffinity(0))`), and the ops that split across
    threads (GEMMs) hold a large share of the step. The thread count is not in a Kineto trace: pista's
    capture writes it as `pista_host`; without it the rule stays silent.

    Why:
    A stray `OMP_NUM_THREADS=1` (set by a launcher, a container image or a data-loader recipe), a
    `torch.set_num_threads(1)` meant for worker processes, or a job scheduler's CPU quota larger than
    what torch was told leaves cores idle while oneDNN's GEMMs run on one: they split across threads
    almost perfectly.

    Example:
    gpu/cpu_linear_1thread (`{"OMP_NUM_THREADS=1 pista run linear --device cpu"}` on a 2-core AMD EPYC):
    1 thread of 2. A bare 1024^3 fp32 matmul measured 25.9 ms on 1 thread and 12.6 ms on 2 (2.06x);
    elementwise ops gained 1.5-1.6x (memory-bound), and are not counted.

    Impact:
    The GEMM ops' own CPU time per step times 1 - threads/cores: linear scaling, which the matmul
    above reached; GEMMs under MIN_THREADED_MFLOP a call (a 64x64 matmul) are left out, as they gain ~nothing. Silent under MIN_STEP_SHARE. New in the issue "Your code and your memory".

    Silent where the CPU was shared (pista.cpuload: GEMMs many times slower than a slow core needs; a notice
    says so): more threads would contend for cores other processes hold.

    Fix:
    `torch.set_num_threads(N)` with N the cores the job owns (`len(os.sched_getaffinity(0))`), or
    unset/raise `OMP_NUM_THREADS`; in a process per core setup (several ranks on one host), give each
    rank its share and keep the total at the core count.

message = torch ran with { $threads } intra-op thread(s) on a process allowed { $cores } cores; { $ops } take
    { $gemm_us } per step ({ $share }% of the step) and split across threads: on { $cores } they would take about
    { $saved_us } less per step.
advice = Call torch.set_num_threads({ $cores }) at start-up, or unset OMP_NUM_THREADS (or set it to { $cores }) in
    the job's environment; if several processes share the host, give each its share of the cores.
fix = { $threads } thread(s) of { $cores } cores run the GEMMs: torch.set_num_threads({ $cores }) saves about
    { $saved_us } per step
basis = the GEMM ops' own CPU time per step times 1 - { $threads }/{ $cores }, scaling linearly with the threads (a
    1024^3 matmul ran 2.06x faster on 2 threads than on 1); elementwise ops not counted
thread-bound-call = GEMM, { $own_us } of its own CPU time on too few threads
