# Los avisos de pista: lo que el profiler no registró, lo que el veredicto y los costes de una sola vez dejan
# abierto, y una regla que falló (pista.notices, pista.isolation, pista.cycles; argumentos: args/_notices.py).

rule-failed = { $stage ->
    [replay] no se pudo reproducir el arreglo de la regla { $rule } con esta traza ({ $error }): sus hallazgos
        conservan la estimación de la propia regla; los demás hallazgos se mantienen. Si puedes, repórtalo junto
        con la traza
   *[check] la regla { $rule } falló con esta traza ({ $error }) y queda fuera; los hallazgos de las demás reglas
        se mantienen. Si puedes, repórtalo junto con la traza
  }
one-time-cost = el { $share }% de esta ventana es coste de una sola vez ({ $rules }): la tabla, los totales y el
    veredicto muestran sobre todo eso; vuelve a perfilar tras un calentamiento (torch.profiler.schedule con pasos
    de warmup) para leer los pasos estables
copy-bound = el veredicto equilibrado pondera los kernels de la GPU, que se ejecutan el { $kernels }% de la
    ventana, pero la GPU está ocupada el { $busy }% de ella y el { $copies }% de su tiempo son copias: las
    transferencias entre el host y el dispositivo marcan el ritmo, no el despacho del host ni los kernels
balanced-host = equilibrado: el host tarda { $ratio }x el tiempo de la GPU y la GPU calcula el { $kernels }% de
    la ventana; el profiler casi duplica el tiempo del host, así que sin él el límite probablemente sea la GPU:
    mide un paso sin el profiler antes de actuar sobre la GPU inactiva
lost-records = { $calls } llamada(s) que ponen trabajo en la GPU ({ $names }) pero ningún registro de kernel,
    copia o memset: se perdieron los registros de la GPU (los búferes de actividad del profiler se descartaron o
    no se volcaron antes de exportar); lo que sigue lee solo el host. Exporta después de que el profiler se
    detenga (en on_trace_ready o tras el bloque `with`)
no-gpu-work = la traza tiene una GPU{ $has_devices ->
        [yes] {" "}({ $devices })
       *[no] {""}
    }{ $has_calls ->
        [yes] {" "}y { $calls } llamada(s) al runtime de CUDA
       *[no] {""}
    } pero nada se ejecutó en ella: el modelo se ejecutó en la CPU (muévelo junto con sus entradas
    con .to('cuda') si se quería usar la GPU), o el profiler se ejecutó sin ProfilerActivity.CUDA
reference-conv = el { $share }% de la ventana ({ $ms } ms en { $calls } llamadas) es { $name }, la convolución
    de referencia de PyTorch en CPU (im2col y un GEMM por imagen): estas convoluciones se ejecutaron sin un
    kernel de oneDNN (mkldnn). En un Mac con Apple silicon, torch>=1.12 las ejecuta en la GPU: mueve el modelo
    y sus entradas a device='mps' (torch.backends.mps.is_available() dice si es posible); en otras CPU, una
    build de torch con oneDNN (torch.backends.mkldnn.is_available()) las ejecuta como aten::mkldnn_convolution
no-host-events = no hay eventos del host (CPU), solo actividad de la GPU: Self CPU es 0 y el veredicto no puede
    comparar el host con la GPU; perfila también con ProfilerActivity.CPU
cpu-activity-missing = no se registró la actividad de la CPU: la traza contiene el trabajo de la GPU y
    { $calls } llamada(s) al runtime pero ninguna op, así que no se puede distinguir lo que hace el host entre
    esas llamadas (Python, ops, un cargador de datos, esperas), ni por qué la GPU está inactiva el { $idle }% de
    la ventana; no se da veredicto de sobrecarga del host ni tiempo del host por región. Perfila con
    activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]
shared-cpu = la CPU estaba compartida mientras se tomó esta traza: { $op } de { $mflop } MFLOP tardó
    { $ms } ms, y la llamada GEMM mediana tardó { $factor }x lo que necesita un núcleo lento; otros procesos ocupaban
    los núcleos (o torch usó más hilos que núcleos tiene el trabajo): los tiempos reflejan la carga de la
    máquina, no la del programa. Vuelve a capturar en una máquina tranquila, con torch.set_num_threads como
    mucho igual a los núcleos propios del trabajo
cpu-step-spread = los pasos de esta traza solo de CPU varían { $spread }x (de { $shortest_ms } ms a
    { $longest_ms } ms): probablemente la máquina estaba ocupada con otro trabajo; vuelve a capturar en una
    máquina tranquila antes de fiarte de diferencias pequeñas
negative-self-times = { $events } evento(s) tienen un tiempo propio negativo: los marcos python_function y los
    eventos que los rodean se solapan sin anidarse (torch los anida igual); la tabla deja fuera esos marcos,
    `pista sql` muestra esos tiempos propios tal cual
zero-durations = { $zero } de { $complete } eventos completos tienen una duración nula o ausente: los tiempos
    propios, los totales y el veredicto se quedan cortos
cycles-overlap = los ciclos { $first } y { $second } se solapan en el tiempo: son dos procesos que comparten pid
    (¿contenedores en una misma máquina?) y no los ciclos de un solo proceso
# una carpeta de rangos (pista.distributed)
rank-notice = rango { $rank }: { $notice }
world-size = las trazas dicen world_size { $world }; la carpeta contiene { $ranks } rango(s)
ranks-by-order = { $count } traza(s) no llevan rango (ni distributedInfo ni rank-N en el nombre): numeradas por
    orden de archivo
skipped-links = se omitieron { $count } enlace(s) simbólico(s) en { $folder } (el primero: { $first }): se leen
    los archivos propios de la carpeta, no aquello a lo que apunta un enlace
workers-capped = --workers { $workers }: esta máquina deja a pista usar { $cores } núcleo(s); se ejecutan
    { $processes } proceso(s)
cycles-options-ignored = aquí se analizan los ciclos de un proceso, un archivo tras otro: --engine, --scheduler
    y --workers son para una carpeta de rangos
