## cpu-threads: en español
title = torch usa menos hilos de CPU que los núcleos de que dispone

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    En una traza solo de CPU, torch se ejecutó con menos hilos intra-op que los núcleos que el proceso
    puede usar (`torch.get_num_threads()` por debajo de `len(os.sched_getaffinity(0))`), y las
    operaciones que se reparten entre hilos (las GEMM) ocupan una parte grande del paso. El número de
    hilos no está en una traza de Kineto: la captura de pista lo escribe como `pista_host`; sin él la
    regla calla.

    Por qué:
    Un `OMP_NUM_THREADS=1` perdido (puesto por un lanzador, una imagen de contenedor o una receta de
    carga de datos), un `torch.set_num_threads(1)` pensado para los procesos trabajadores, o una cuota
    de CPU del planificador mayor que lo que se le dijo a torch dejan núcleos parados mientras las GEMM
    de oneDNN corren en uno: se reparten entre hilos casi a la perfección.

    Ejemplo:
    gpu/cpu_linear_1thread (`OMP_NUM_THREADS=1 pista run linear --device cpu` en una AMD EPYC de 2
    núcleos): 1 hilo de 2. Un matmul fp32 de 1024^3 midió 25.9 ms con 1 hilo y 12.6 ms con 2 (2.06x);
    las operaciones elemento a elemento ganaron 1.5-1.6x (limitadas por memoria) y no se cuentan.

    Impacto:
    El tiempo propio de CPU de las GEMM por paso por 1 - hilos/núcleos: escalado lineal, el que alcanzó
    el matmul anterior. Calla por debajo de MIN_STEP_SHARE.

    Solución:
    `torch.set_num_threads(N)` con N los núcleos del trabajo (`len(os.sched_getaffinity(0))`), o quitar
    o subir `OMP_NUM_THREADS`; con un proceso por grupo de núcleos (varios rangos en una máquina), da a
    cada rango su parte y mantén el total en el número de núcleos.

message = torch se ejecutó con { $threads } hilo(s) intra-op en un proceso con { $cores } núcleos permitidos;
    { $ops } ocupan { $gemm_us } por paso (el { $share }% del paso) y se reparten entre hilos: con { $cores }
    tardarían unos { $saved_us } menos por paso.
advice = Llama a torch.set_num_threads({ $cores }) al arrancar, o quita OMP_NUM_THREADS (o ponlo a { $cores }) en el
    entorno del trabajo; si varios procesos comparten la máquina, da a cada uno su parte de los núcleos.
fix = { $threads } hilo(s) de { $cores } núcleos ejecutan las GEMM: torch.set_num_threads({ $cores }) ahorra unos
    { $saved_us } por paso
basis = el tiempo propio de CPU de las GEMM por paso por 1 - { $threads }/{ $cores }, con escalado lineal en los
    hilos (un matmul de 1024^3 fue 2.06 veces más rápido con 2 hilos que con 1); las operaciones elemento a elemento
    no se cuentan
thread-bound-call = GEMM, { $own_us } de tiempo propio de CPU con pocos hilos
