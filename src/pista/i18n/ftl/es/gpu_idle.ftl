## gpu-idle: en español
title = La GPU espera bajo una región que casi no lanza nada

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    GPU inactiva dentro de los pasos bajo una región de record_function que dura milisegundos y casi no
    lanza nada: el host construyendo un lote en la CPU, el `__next__` de un `DataLoader`, E/S, un sleep,
    checkpoints. La regla nombra la región, cuánto dura cada llamada y qué lanza, y las operaciones del
    host con más tiempo propio en esa inactividad.

    Por qué:
    La GPU solo puede estar tan ocupada como el host la mantenga. Los huecos cortos entre los
    lanzamientos de un bucle de operaciones son sobrecarga por operación (`overhead-bound`,
    `launch-bound`, `many-calls` se los reparten); aquí el host deja de alimentar a la GPU para hacer
    otra cosa, y ni fusionar ni los CUDA graphs recuperan ese tiempo: hay que sacar ese trabajo del
    camino de la GPU (workers, prefetch, la propia GPU).

    Ejemplo:
    gpu/gpu_idle_dataloader en una H200: cada paso construye un lote en la CPU (`aten::randn`,
    normalización, un sleep de 4 ms) dentro de `data_loading` y luego ejecuta el forward de un MLP bf16
    (0.75 ms de GPU por paso). `data_loading` dura 13.0-14.7 ms por paso con un solo lanzamiento (su
    copia H2D); la GPU está inactiva bajo ella 13.4 ms por paso, el 87% de la mediana de paso de 15.4 ms
    (crítico, y la primera corrección).

    Impacto:
    Por paso: la GPU inactiva (ningún kernel, copia ni memset en el dispositivo más ocupado) dentro de
    los pasos bajo esas regiones, con aritmética de intervalos sobre la traza, de modo que cada ns cuenta
    una vez: la inactividad tras una sincronización hasta el siguiente trabajo es de la sincronización
    (host-sync, trailing-sync, pageable-memcpy: 0.8 ms por paso en gpu_idle_dataloader, tras la
    sincronización de su copia paginable) y la que hay entre los lanzamientos de las operaciones es
    sobrecarga por operación, nunca de esta regla. Es lo que sacar ese trabajo del camino de la GPU
    ahorraría como mucho (cota superior: un cargador en workers sigue costando la copia). Las demás causas
    concretas de inactividad son hallazgos de otras reglas y quedan para ellas, para no contar dos veces
    la misma inactividad: torch.compile compilando (recompilation: 292 ms por paso en gpu/recompile), la
    preparación de una sola vez en una primera llamada (cold-start, dead-window, lazy-loading: la primera
    `matmul_add` de seed_mm64_cold, 137.8 ms) y las peticiones de búfer del profiler (profiler-overhead).
    El registro de la GPU inactiva (`_idle`) las marca todas y overhead-bound también las deja fuera. Antes la regla
    informaba de cada hueco de 1 ms o más como un aviso sin impacto, fuera cual fuera su causa, repitiendo
    esas reglas.

    Cada región se lee por su propio nombre y sus operaciones, y el consejo sigue a esa lectura: entrada
    (la marca del DataLoader, una región con nombre de datos en límites de palabra, o una cuya inactividad
    tiene trabajo del host, copias y ninguna op de cómputo), el paso del optimizador (con nombre de
    optimizador, o casi todo bajo `Optimizer.step#` y ops foreach/fused: el '## optimizer ##' de
    hta_nccl_data y de hta_sampled_rank0, a los que antes se decía "carga en workers del DataLoader"),
    arranque (las llamadas que arrancan CUDA, o una región única de una ventana antes del primer trabajo
    de la GPU: el '[param|cuda]' de damaged_fields), una espera a un colectivo (la mayor parte de su
    inactividad acaba donde empieza un colectivo encolado antes de ella: el '## KJTAllToAllSplitsAwaitable
    wait() ##' de hta_negq_rank0, TorchRec leyendo los tamaños de su all-to-all, al que antes se decía "carga
    en workers del DataLoader"), u operaciones del propio modelo en el host. La
    inactividad bajo los pasos del optimizador que informa unfused-optimizer es hallazgo suyo, con el
    precio de un par medido con fused, y queda fuera aquí.

    Solución:
    Entrada: saca el trabajo del camino crítico de la GPU: `DataLoader(num_workers>0, pin_memory=True)`
    con prefetch, para que el lote N+1 esté listo mientras la GPU procesa el lote N; copia con
    `non_blocking=True` desde memoria fijada; genera los datos en la GPU; saca del paso los checkpoints y
    los logs o llévalos a un hilo. El optimizador: los remedios de unfused-optimizer para el modo que
    muestran sus ops (`fused=True` para Adam, AdamW y SGD; foreach o un paso compilado para uno por
    parámetro), ninguno si ya corre fusionado o foreach sin versión fusionada. Arranque: perfila tras un
    calentamiento. Un colectivo: solápalo con cómputo (lánzalo antes o de forma asíncrona, la distribución
    de entrada en pipeline de TorchRec) y compara los rangos, porque el último en llegar fija la espera.
    Operaciones del modelo en el host: averigua dónde corren (`with_stack=True`) y llévalas
    a la GPU.

step-word = { $step ->
    [step] paso
   *[window] ventana
  }
of = { $step ->
    [step] la mediana de paso de { $step_us }
   *[window] la ventana de { $step_us }
  }
launches = { $launches ->
    [yes] lanza { $launches_per_call } kernel(s) o copias
   *[no] no lanza nada
  }
optimizer = { $has_optimizer ->
    [yes] { $optimizer }
   *[no] el optimizador
  }
mode-word = { $mode ->
    [fused] fusionado
    [foreach] foreach
    [per-parameter] por parámetro
   *[none] {""}
  }
reading = { $kind ->
    [optimizer] el paso del optimizador: { optimizer }{ $mode ->
        [none] {""}
       *[other] , { mode-word }
      };{" "}
    [start-up] arranque;{" "}
    [host] operaciones del propio modelo en el host;{" "}
    [collective] esperando a un colectivo: { $collective };{" "}
   *[input] {""}
  }
region-item = '{ $name }' ({ reading }{ $many_calls ->
    [yes] { $calls } llamadas de { $host_us }
   *[no] una llamada de { $host_us }
  }; cada una { launches }): { $idle_us } por { step-word }
message = La GPU está inactiva { $idle_us } por { step-word } (el { $share } de { of }); { $claimed_us } por
    { step-word } están bajo regiones que casi no lanzan nada{ $all_collective ->
        [yes] :{" "}
       *[no] , así que el host hace otra cosa que alimentar a la GPU:{" "}
    }{ $regions }. El tramo más largo dura { $longest_us }{ $has_ops ->
        [yes] ; por paso, la mayor parte del tiempo propio del host en esta inactividad: { $ops }
       *[no] {""}
    }{ $no_op ->
        [yes] ; { $no_op_us } por { step-word } sin ninguna operación registrada (Python, E/S de archivos o red,
            esperas: with_stack=True nombra el código)
       *[no] {""}
    }.
remedy = { $remedy ->
    [already] { optimizer } ya corre { mode-word }, así que no hay un modo más rápido al que cambiar: lo que retiene
        a la GPU es el código del host alrededor de sus kernels (recorte de gradientes, schedulers, contabilidad
        por parámetro); graba con with_stack=True para verlo
    [fused] torch.optim.{ $optimizer }(..., fused=True) hace la actualización en un kernel con un par de ops del
        host en lugar de una op y un lanzamiento por parámetro y pasada
    [foreach] pasa foreach=True si lo admite, o compila su paso (torch.compile(opt.step)), para que la
        actualización sean unos pocos kernels sobre todos los parámetros en lugar de una op por parámetro
   *[unknown] sus ops no están en la traza; si { optimizer } actualiza los parámetros uno a uno, compila su paso
        (torch.compile(opt.step)) o dale una implementación foreach; with_stack=True nombra su código
  }
Remedy = { $remedy ->
    [already] { $has_optimizer ->
            [yes] { $optimizer_cap }
           *[no] El optimizador
        } ya corre { mode-word }, así que no hay un modo más rápido al que cambiar: lo que retiene
        a la GPU es el código del host alrededor de sus kernels (recorte de gradientes, schedulers, contabilidad
        por parámetro); graba con with_stack=True para verlo
    [fused] Torch.optim.{ $optimizer }(..., fused=True) hace la actualización en un kernel con un par de ops del
        host en lugar de una op y un lanzamiento por parámetro y pasada
    [foreach] Pasa foreach=True si lo admite, o compila su paso (torch.compile(opt.step)), para que la
        actualización sean unos pocos kernels sobre todos los parámetros en lugar de una op por parámetro
   *[unknown] Sus ops no están en la traza; si { optimizer } actualiza los parámetros uno a uno, compila su paso
        (torch.compile(opt.step)) o dale una implementación foreach; with_stack=True nombra su código
  }
advice = { $kind ->
    [optimizer] '{ $name }' es el paso del optimizador ({ optimizer }), no entrada: su tiempo en el host es la
        inactividad de la GPU. { Remedy }.
    [start-up] '{ $name }' es arranque, no entrada: corre una vez, antes del primer trabajo de la GPU o en las
        llamadas que arrancan CUDA (el contexto, los handles de cuBLAS/cuDNN, construir el modelo y sus datos),
        no en el régimen estable. Ejecuta una iteración antes de perfilar, o perfila con
        torch.profiler.schedule(wait=1, warmup=1, active=N), para leer los pasos.
    [collective] '{ $name }' espera a un colectivo, no a la entrada: el siguiente trabajo de la GPU ahí es lo que
        lanzó { $collective }, encolado antes de que empezara la inactividad y ejecutado solo cuando esta acaba, así
        que la GPU espera a los otros rangos (o a un stream del que depende el colectivo) y el host a su
        resultado. Solapa el colectivo con cómputo: lánzalo antes o de forma asíncrona y espera solo donde
        hace falta su resultado (el TrainPipelineSparseDist de TorchRec ejecuta el all-to-all de entrada del
        lote siguiente durante este), y compara las trazas de los rangos en este punto: el último rango en
        llegar fija la espera.
    [host] '{ $name }' ejecuta operaciones del propio modelo en el host (ops de cómputo o nodos de autograd) y
        casi no lanza nada mientras la GPU espera: mira dónde corren (tensores que quedaron en la CPU, un hilo
        al que espera el paso); graba con with_stack=True para ver su código y lleva ese trabajo a la GPU o
        fuera del paso.
   *[input] { $workers ->
        [yes] '{ $name }' ya carga en procesos workers y la GPU aún lo espera: los workers son más
            lentos que el paso. Dales más (num_workers hasta los núcleos libres, prefetch_factor,
            persistent_workers=True), aparta los hilos del paso de sus núcleos y abarata cada muestra
            (decodifica en la GPU, guarda los datos decodificados, transformaciones por lotes).
       *[no] '{ $name }' es trabajo de entrada en el camino crítico de la GPU: carga en workers del
            DataLoader (num_workers>0, pin_memory=True, prefetch) para que el lote siguiente esté listo mientras la
            GPU procesa este, copia con non_blocking=True o genera los datos en la GPU; saca del paso los
            checkpoints y los logs, o llévalos a un hilo.
    }
  }
fix = { $kind ->
    [optimizer] { $name } tarda { $host_us } de { of } con la GPU inactiva: es el paso del optimizador: { $fix_fused ->
        [yes] torch.optim.{ $optimizer }(..., fused=True)
       *[no] { remedy }
      }
    [start-up] { $name } tarda { $host_us } de { of } una vez, antes del trabajo de la GPU: arranque,
        perfila tras un calentamiento
    [collective] { $name } espera { $host_us } por llamada a { $collective } con la GPU inactiva: solapa el
        colectivo con cómputo y compara los rangos
    [host] { $name } tarda { $host_us } de { of } ejecutando operaciones del modelo en el host:
        graba con with_stack=True y lleva ese trabajo a la GPU
   *[input] { $workers ->
        [yes] { $name } tarda { $host_us } de { of } aunque tiene workers: más workers, muestras más baratas
       *[no] { $name } tarda { $host_us } de { of } y { launches }: carga en workers del DataLoader
            (num_workers>0, pin_memory=True)
    }
  }
basis = GPU inactiva dentro de los pasos bajo regiones que casi no lanzan nada, por paso, sin la inactividad
    tras las sincronizaciones (de otros hallazgos); cota superior
idle-gap = GPU inactiva durante { $idle_us } bajo una región que casi no lanza nada
under-region = { $idle_us } de GPU inactiva bajo esta llamada, { $launches } lanzamiento(s) en ella
self-time = { $self_us } por paso de tiempo propio del host de esta op dentro de la inactividad
