## slow-peer-copy: the text of its findings, in English
title = Copies between two GPUs take a slow path

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Peer-to-peer copies (`Memcpy PtoP`: `tensor.to("cuda:4")` from another GPU, a send/recv or a copy between
    devices) between one pair of GPUs running at under a quarter of the rate another pair reaches in the same
    trace: those two GPUs have no NVLink between them (or fewer links), and the bytes go over PCIe, through a
    switch or the host.

    Why:
    On a server whose GPUs are not all linked to each other (NVLink in pairs or a cube-mesh, PCIe between the
    rest), the same copy can run ten times slower to one peer than to another. Which GPUs a program puts
    next to each other (pipeline stages, tensor-parallel groups, the ranks that exchange most) decides
    which path its bytes take. `nvidia-smi topo -m` shows the links.

    Example:
    GPUPuzzlers' p2p_copy (foreign/gp_p2p_copy, one 8-GPU server): ten 40 MB copies from GPU 0 to each of
    GPUs 1, 2 and 4 on three streams: 88.5 GB/s to GPU 1, 45.5 GB/s to GPU 4, 7.5 GB/s to GPU 2, whose copies
    take 53 of the window's 54 ms.

    Impact:
    The step replayed with the slow pairs' copies at the fastest pair's rate in the trace (their bytes over
    its GB/s): an upper bound where no two GPUs could be placed on that link, what placing them there saves
    otherwise. Pairs whose copies average under 1 MiB are left out (their latency, not the link, sets their
    time).

    Fix:
    Put the GPUs that exchange most on NVLink-connected pairs (`nvidia-smi topo -m`; CUDA_VISIBLE_DEVICES, the
    rank-to-device map, pipeline and tensor-parallel group order), or route the copy through a GPU linked to
    both; check that peer access is on (`torch.cuda.can_device_access_peer`).

pair-item = GPU { $src } -> GPU { $dst }: { $copies } copies, { $mib } MiB at { $gb_s } GB/s
message = Peer copies between some GPUs run far slower than between others in this trace: { $pairs }; against
    { $fast }. Together the slow copies take { $slow_us }; at GPU { $fast_src } -> GPU { $fast_dst }'s rate they
    would save { $saved_us } per step.
advice = GPU { $src } and GPU { $dst } have no fast link between them (no NVLink, or fewer lanes: the copies go over
    PCIe or through the host). Put the GPUs that exchange most on NVLink-connected pairs (see nvidia-smi topo -m;
    CUDA_VISIBLE_DEVICES, the rank-to-device map, the order of pipeline and tensor-parallel groups), or route the
    copy through a GPU linked to both, and check that peer access is on (torch.cuda.can_device_access_peer).
fix = copies GPU { $src } -> GPU { $dst } run at { $gb_s } GB/s against { $fast_gb_s } GB/s between GPU { $fast_src }
    and GPU { $fast_dst }: place the GPUs that exchange most on NVLink-connected pairs (nvidia-smi topo -m).
basis = replay of the profiled steps with the slow pairs' copies at the fastest pair's rate
slow-copy = GPU { $src } -> GPU { $dst } at { $gb_s } GB/s
