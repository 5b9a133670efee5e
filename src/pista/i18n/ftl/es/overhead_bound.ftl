## overhead-bound: en español
title = Limitado por la sobrecarga del host: la GPU espera mientras el host despacha operaciones

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El host tarda mucho más en emitir el trabajo que la GPU en hacerlo: el Self CPU total es muchas veces
    el Self CUDA total y la GPU pasa inactiva la mayor parte de la ventana (el veredicto). El hallazgo es
    la parte de esa inactividad que es sobrecarga por operación: la GPU esperando mientras el host
    ejecuta Python entre operaciones, despacha las operaciones y lanza sus kernels. Dice dónde (las
    operaciones bajo las que esperó la GPU, Python entre operaciones, código compilado), si el veredicto
    está cerca de su umbral y cuánto podría ser coste del propio profiler.

    Por qué:
    Cada operación paga un peaje fijo en Python, el dispatcher y el lanzamiento CUDA, decenas de µs. Si el
    kernel dura 2 µs, ese peaje es el tiempo de ejecución: una GPU o un kernel más rápidos no cambian nada.
    No toda GPU inactiva es ese peaje: un cargador de datos, una sincronización, una compilación o los
    búferes del profiler también dejan la GPU inactiva y se arreglan de otra forma; son de otros hallazgos
    (gpu-idle, host-sync, recompilation, cold-start, profiler-overhead...) y su inactividad queda fuera de
    este.

    Ejemplo:
    `torch.add(torch.matmul(x, w), b)` a 64x64 en bf16 en una H200 (seed_mm64_warm): 510 µs de Self CPU
    para 12 µs de Self CUDA en 3 pasos (43x); la GPU está ocupada el 2% de la ventana e inactiva toda la
    mediana de paso de 126 µs mientras el host despacha aten::mm y aten::add. series_mlp_eager (MLP,
    AdamW foreach, eager): 5.9 ms de los 6.9 ms del paso (86%). gpu/gpu_idle_dataloader también es
    overhead-bound según el veredicto, pero 13.4 ms de sus 14.9 ms de inactividad por paso están bajo
    `data_loading` (de gpu-idle) y 0.8 ms tras sus sincronizaciones: solo 0.7 ms (4.7%) son por operación.

    Impacto:
    Por paso: la GPU inactiva (ningún kernel, copia ni memset en el dispositivo más ocupado) dentro de los
    pasos, menos, con aritmética de intervalos, la inactividad que reclama un hallazgo más específico, de
    modo que cada ns se cuenta una vez: tras una sincronización o una copia del dispositivo al host hasta
    el siguiente trabajo (host-sync, trailing-sync, pageable-memcpy), mientras torch.compile compila
    (recompilation), en las peticiones de búfer del profiler (profiler-overhead), en la preparación de una
    sola vez de una primera llamada (cold-start, dead-window, lazy-loading), bajo una región que casi no
    lanza nada (gpu-idle), justo antes de kernels diminutos (launch-bound), bajo llamadas muy repetidas
    (many-calls) y lo que otra regla declare con una función `claimed_idle(facts)`. Lo que queda es lo que
    CUDA graphs o fusionar ahorrarían como mucho (cota superior). En gpu/host_sync_item quedan 501 µs de
    los 847 µs de inactividad por paso (55%) frente a los 355 µs de host-sync: las sincronizaciones cuestan
    poco mientras el host sea así de lento (medido sin perfilar en la H200: 505 µs por paso tal cual,
    330-610 µs según la ejecución sin sus 8 sincronizaciones, con el host aún como límite, y 172 µs con el
    bucle además capturado como CUDA graph), pero hay que quitarlas para que un graph pueda capturar el
    bucle, y la corrección lo dice. Antes el hallazgo era siempre crítico y sin impacto, aunque la
    inactividad fuera de un cargador de datos.

    Se deja fuera todo tramo que poseen los hallazgos de las reglas de una sola vez (las primeras
    llamadas de lazy-loading en una ventana sin pasos eran antes "sobrecarga por operación", con el
    consejo de torch.compile), y el texto nombra solo las reglas de una sola vez que informan; la
    inactividad de una sola vez que ningún hallazgo impreso posee se dice como preparación de una sola vez
    (issue 35: seed_mm4096_compile_cold apuntaba 1.17 ms a cold-start, dead-window y lazy-loading, ninguno
    impreso). A un paso que ya reproduce CUDA graphs no se le dice que capture uno: si casi todo está en
    graphs, su inactividad es el trabajo del host alrededor de las reproducciones. Las cifras por paso son
    partes del paso medio (seed_mm64_cold: antes 46.1 ms de inactividad por paso frente a una mediana de
    paso de 368 µs).

    Solución:
    Según dónde esté la inactividad: Python entre operaciones eager y su despacho -> torch.compile
    (fusiona y recorta el despacho) o un CUDA graph del paso entero (`torch.compile(mode="reduce-overhead")`,
    `torch.cuda.CUDAGraph`); código ya compilado -> el CUDA graph, o más trabajo por llamada (un lote
    mayor), nunca otro torch.compile; sincronizaciones dentro del paso -> quítalas primero (ver host-sync),
    porque un graph no puede capturar un `.item()`; la inactividad bajo un paso del optimizador foreach
    es de unfused-optimizer (`fused=True`), listada con lo que reclaman otros hallazgos. El propio profiler infla el tiempo del host,
    unas 2x en bucles densos en operaciones (gpu/host_sync_item: 1003 µs por paso con profiler, 1138 con
    record_shapes, 505 sin profiler; gpt2_conv1d, con with_stack y record_shapes, 74.9 ms con profiler
    frente a ~29 ms sin él), así que el mensaje dice qué seguiría inactivo sin la mitad del tiempo de
    host, y un veredicto cerca de su umbral se debe contrastar con el paso medido sin perfilar.

ratio-text = { $has_ratio ->
    [yes] { $ratio }x
   *[no] sin tiempo de GPU medible
  }
share-text = el { $share } { $whole ->
    [step] del paso medio
   *[window] de la ventana
  } de { $whole_us }
between-item = { $us } con el host fuera de toda operación (Python entre operaciones{ $engine ->
        [yes] ; { $engine_us } de ello alrededor del backward, mientras el motor de autograd arranca o termina, lo
            que el profiler infla
       *[no] {""}
    })
compiled-item = { $us } dentro de código compilado
top-item = { $name } ({ $calls } por paso, { $us })
claim-name = { $claim ->
    [sync_us] tras sincronizaciones
    [data_us] bajo regiones que casi no lanzan nada
    [cold_us] en preparación de una sola vez
    [compile_us] mientras se compila
    [profiler_us] en las peticiones de búfer del profiler
    [setup_us] mientras cuDNN prepara formas nuevas
    [launch_us] antes de kernels diminutos
   *[calls_us] bajo llamadas muy repetidas
  }
left-item = { $claim ->
    [others] { $us } que reclaman { $rules }
   *[other] { $us } { claim-name } ({ $rules })
  }
unowned-item = { $us } { $claim ->
    [sync_us] esperando tras sincronizaciones
    [data_us] bajo regiones que casi no lanzan nada
    [cold_us] preparación de una sola vez (primeras llamadas: el contexto de CUDA, las bibliotecas y la carga de
        kernels)
    [compile_us] compilando
    [profiler_us] las propias peticiones de búfer del profiler
    [setup_us] cuDNN preparando formas nuevas
    [launch_us] antes de kernels diminutos
   *[calls_us] bajo llamadas muy repetidas
  }
message = Self CPU total { $self_cpu_us } frente a Self CUDA total { $self_cuda_us } ({ ratio-text }); la GPU está
    ocupada el { $busy }% de la ventana de { $window_us }. De sus { $idle_us } de inactividad por paso,
    { $per_op_us } ({ share-text }) son sobrecarga por operación, la GPU esperando mientras el host despacha
    operaciones{ $has_parts ->
        [yes] : { $parts }
       *[no] {""}
    }.{ $has_top ->
        [yes] {" "}La GPU espera sobre todo bajo { $top_ops }.
       *[no] {""}
    }{ $has_left ->
        [yes] {" "}Queda para otros hallazgos, por paso: { $left }.
       *[no] {""}
    }{ $has_unowned ->
        [yes] {" "}Tampoco es sobrecarga por operación, por paso: { $unowned }.
       *[no] {""}
    }{ $near_threshold ->
        [yes] {" "}El veredicto está cerca de su umbral ({ ratio-text } frente a { $ratio_threshold }x, GPU ocupada
            el { $busy_round }% frente a un máximo del { $busy_threshold }%).
       *[no] {""}
    }{" "}El profiler casi duplica el tiempo de host de bucles así{ $options ->
        [both] {" "}(record_shapes y with_stack añaden más)
        [record_shapes] {" "}(record_shapes añaden más)
        [with_stack] {" "}(with_stack añaden más)
       *[none] {""}
    }: { $unprofiled_small ->
        [yes] esta inactividad podría ser el coste del propio profiler; mide el paso sin perfilar antes de actuar.
       *[no] quitando la mitad del tiempo del host seguirían inactivos unos { $unprofiled_us } por paso.
    }
static-first = { $new_shapes ->
    [yes] {" "}Las formas cambian en cada paso ({ $new_shape_op }: { $new_shape_calls } llamadas por paso con una
        forma que ningún otro paso de la ventana tiene): un CUDA graph reproduce formas fijas, así que hazlas
        estáticas primero (una caché KV estática preasignada donde una secuencia crece, longitudes rellenadas o por
        tramos), o torch.compile recompila y graba un grafo por forma.
   *[no] {""}
  }
advice-where = { $where ->
    [compiled] El tiempo del host está en código ya compilado: otro torch.compile no ayudará. Reprodúcelo como CUDA
        graph (torch.compile(mode='reduce-overhead')) o da más trabajo a cada llamada (un lote mayor) para repartir
        su coste fijo.
    [partly-compiled] Parte del paso ya se ejecuta compilada: compila el resto con ella (la pérdida, las
        operaciones eager del backward, el paso del optimizador) para que un solo grafo contenga el paso, y
        reprodúcelo como CUDA graph (torch.compile(mode='reduce-overhead')); otro torch.compile de la parte
        compilada no ayudará.
    [python] La mayor parte es Python entre operaciones: aplica torch.compile al paso (elimina ese Python al
        trazarlo y fusiona las operaciones) o captura el paso como CUDA graph (torch.cuda.CUDAGraph,
        torch.compile(mode='reduce-overhead')).
   *[dispatch] La mayor parte es el propio despacho y lanzamiento de las operaciones: fusiónalas con
        torch.compile, captura el paso como CUDA graph (torch.compile(mode='reduce-overhead'),
        torch.cuda.CUDAGraph) o da más trabajo a cada llamada (agrupa las entradas en lotes).
  }
advice = { $graphed ->
    [mostly] El paso ya reproduce CUDA graphs ({ $graph_launches } lanzamiento(s) de graph por paso, la mayoría de
        sus kernels): la GPU espera al trabajo del host alrededor de las reproducciones (su Python, el muestreo, la
        planificación, la preparación de entradas), no a los lanzamientos. Solapa ese trabajo con la reproducción
        (prepara el paso siguiente mientras corre el graph) o da más trabajo a cada reproducción (un lote mayor);
        otro CUDA graph o torch.compile no ayudará.{ static-first }
    [partly] Parte del paso ya reproduce CUDA graphs ({ $graph_launches } lanzamiento(s) de graph por paso):
        captura en esos graphs las operaciones lanzadas fuera de ellos, o fusiónalas con
        torch.compile.{ static-first }
   *[none] { $syncs_at_end ->
            [yes] Las { $end_syncs } sincronizaciones por paso de { $sync_op } llegan tras el último kernel del paso
                (leen su resultado): captura como CUDA graph lo que va antes y lee el resultado tras la
                repetición.{" "}
           *[no] {""}
        }{ $syncs_at_start ->
            [yes] Las { $start_syncs } sincronizaciones por paso de { $sync_op } llegan antes del primer kernel del
                paso (suben su entrada): quedan fuera de un CUDA graph de lo que sigue, que lee la entrada de un búfer
                estático.{" "}
           *[no] {""}
        }{ $syncs_first ->
            [yes] Quita primero las { $mid_syncs } sincronizaciones por paso dentro de operaciones{ $has_see ->
                    [yes] {" "}(ver { $see })
                   *[no] {""}
                }: un CUDA graph no puede capturar una sincronización (.item(), .cpu(), torch.cuda.synchronize()) y
                torch.compile corta su grafo en ellas.{" "}
           *[no] {""}
        }{ advice-where }{ static-first }{ $caution ->
            [yes] {" "}Antes de actuar, mide el paso sin el profiler: infla justo este tiempo del host.
           *[no] {""}
        }
  }
fix = la GPU espera { $per_op_us } por paso ({ share-text }) mientras el host despacha operaciones ({ $has_top ->
        [yes] { $top }
       *[no] las operaciones
    }){ $fix_case ->
        [graphed-mostly] {" "}alrededor de sus reproducciones de CUDA graph: solapa ese trabajo del host con la
            reproducción, o da más trabajo a cada una
        [graphed-partly] {" "}fuera de los CUDA graphs que reproduce: captura esas operaciones en los graphs, o
            fusiónalas
        [syncs-first] : quita las { $mid_syncs } sincronizaciones por paso de { $sync_op } y luego captura el paso
            como CUDA graph
        [syncs-at-end] : captura el paso hasta su { $sync_op } como CUDA graph (la lectura queda fuera) o compílalo
            con torch.compile
        [compiled] {" "}en código compilado: usa torch.compile(mode='reduce-overhead') (CUDA graphs) o un lote mayor
        [partly-compiled] , en parte fuera del código compilado: compila el paso entero y reprodúcelo como CUDA
            graph
       *[other] : aplica torch.compile al paso o captúralo como CUDA graph
    }
basis = GPU inactiva dentro de los pasos mientras el host despacha operaciones, por paso, sin la inactividad que
    reclaman otros hallazgos (tras las sincronizaciones, bajo regiones de datos o de preparación, la compilación, los
    búferes del profiler, antes de kernels diminutos, bajo llamadas repetidas); cota superior
gpu-waited-under = GPU inactiva { $idle_us } bajo esta llamada; { $idle_us_per_step } por paso bajo todas las
    llamadas de esta operación
between-ops = GPU inactiva { $idle_us } con el host fuera de toda operación ({ $engine ->
        [yes] alrededor del backward, el motor de autograd arrancando o terminando)
       *[no] Python entre operaciones)
    }
