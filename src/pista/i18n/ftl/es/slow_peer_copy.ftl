## slow-peer-copy: en español
title = Las copias entre dos GPUs toman un camino lento

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Copias entre pares de GPUs (`Memcpy PtoP`: `tensor.to("cuda:4")` desde otra GPU, un send/recv o una copia
    entre dispositivos) entre un par de GPUs a menos de una cuarta parte del ritmo que otro par alcanza en la
    misma traza: esas dos GPUs no tienen NVLink entre ellas (o tienen menos enlaces), y los bytes van por PCIe,
    por un switch o por el host.

    Por qué:
    En un servidor cuyas GPUs no están todas enlazadas entre sí (NVLink por parejas o en malla, PCIe entre el
    resto), la misma copia puede ir diez veces más lenta hacia un par que hacia otro. Qué GPUs pone juntas un
    programa (etapas de pipeline, grupos de paralelismo de tensores, los rangos que más intercambian) decide por
    qué camino van sus bytes. `nvidia-smi topo -m` muestra los enlaces.

    Ejemplo:
    p2p_copy de GPUPuzzlers (foreign/gp_p2p_copy, un servidor de 8 GPUs): diez copias de 40 MB desde la GPU 0
    a cada una de las GPUs 1, 2 y 4 en tres streams: 88.5 GB/s hacia la GPU 1, 45.5 GB/s hacia la GPU 4, 7.5
    GB/s hacia la GPU 2, cuyas copias ocupan 53 de los 54 ms de la ventana.

    Impacto:
    El paso reproducido con las copias de los pares lentos al ritmo del par más rápido de la traza (sus bytes
    entre sus GB/s): una cota superior donde ningún par de GPUs pudiera colocarse en ese enlace, lo que ahorra
    colocarlas ahí en otro caso. Los pares cuyas copias promedian menos de 1 MiB quedan fuera (su latencia, no
    el enlace, marca su tiempo).

    Solución:
    Coloca las GPUs que más intercambian en pares unidos por NVLink (`nvidia-smi topo -m`; CUDA_VISIBLE_DEVICES,
    el mapa de rangos a dispositivos, el orden de los grupos de pipeline y de paralelismo de tensores), o pasa la
    copia por una GPU enlazada con ambas; comprueba que el acceso entre pares está activo
    (`torch.cuda.can_device_access_peer`).

pair-item = GPU { $src } -> GPU { $dst }: { $copies } copias, { $mib } MiB a { $gb_s } GB/s
message = Las copias entre algunas GPUs van mucho más lentas que entre otras en esta traza: { $pairs }; frente a
    { $fast }. Juntas, las copias lentas ocupan { $slow_us }; al ritmo de GPU { $fast_src } -> GPU { $fast_dst }
    ahorrarían { $saved_us } por paso.
advice = La GPU { $src } y la GPU { $dst } no tienen un enlace rápido entre ellas (sin NVLink, o con menos carriles:
    las copias van por PCIe o por el host). Coloca las GPUs que más intercambian en pares unidos por NVLink (mira
    nvidia-smi topo -m; CUDA_VISIBLE_DEVICES, el mapa de rangos a dispositivos, el orden de los grupos de pipeline
    y de paralelismo de tensores), o pasa la copia por una GPU enlazada con ambas, y comprueba que el acceso entre
    pares está activo (torch.cuda.can_device_access_peer).
fix = las copias GPU { $src } -> GPU { $dst } van a { $gb_s } GB/s frente a { $fast_gb_s } GB/s entre la GPU
    { $fast_src } y la GPU { $fast_dst }: coloca las GPUs que más intercambian en pares unidos por NVLink
    (nvidia-smi topo -m).
basis = reproducción de los pasos perfilados con las copias de los pares lentos al ritmo del par más rápido
slow-copy = GPU { $src } -> GPU { $dst } a { $gb_s } GB/s
