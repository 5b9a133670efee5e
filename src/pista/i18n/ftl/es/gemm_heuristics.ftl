## gemm-heuristics: en español
title = GEMMs con formas nuevas esperan a que cuBLAS elija un kernel

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Llamadas GEMM (aten::mm, addmm, bmm...) con formas de entrada no vistas antes en la traza que tardan
    mucho en el host antes de lanzar su kernel: cuBLAS(Lt) ejecuta sus heurísticas para cada tamaño nuevo,
    elige un kernel (a menudo uno nuevo, que CUDA carga luego de forma perezosa) y solo entonces lanza. Vistas
    en dos o más llamadas con formas distintas, las formas cambian en régimen estable (un tamaño de lote o
    de secuencia dinámico). Las consultas cudaOccupancy* que cuBLASLt hace en el primer GEMM del proceso se
    cuentan si aparecen; los sorts y scans de CUB las hacen en cada llamada (el backward del embedding de
    big_gpt_eager_20steps) y no son GEMMs.

    Por qué:
    La elección se guarda por forma, así que una forma fija la paga una vez; una forma que cambia en cada
    paso la paga en cada paso, en el host, con la GPU inactiva cuando el host es el cuello de botella.

    Ejemplo:
    `gpu/gemm_new_shapes` (un `x @ w` bf16 con w de 1024x1024 y una M nueva en cada paso: 1000, 3000, 7777
    en los pasos perfilados): cada aten::mm pasa 2.6-3.6 ms en el host antes de su kernel nvjet de 6-25 µs,
    un kernel nuevo cada vez (una Lazy Function Loading cada una); no se registra ninguna consulta de
    ocupación.

    Impacto:
    El tiempo de GPU inactiva desde el inicio de cada GEMM con forma nueva hasta su lanzamiento, menos lo que
    tarda el mismo op con formas ya vistas (ninguna en gpu/gemm_new_shapes: ahí es una cota superior), por
    paso: gpu/gemm_new_shapes 3.0 ms por paso, casi todo su paso mediano de 2.9 ms (crítico). Antes la regla
    contaba consultas de ocupación, costaran lo que costaran: informaba de los sorts de CUB en
    big_gpt_eager_20steps (9 µs por paso) y de la primera llamada a cuBLAS dentro del paso frío de
    seed_mm64_cold (de cold-start). Una llamada dentro de un paso frío, una ventana muerta o la compilación
    pertenece a esos hallazgos.

    Sin pasos, las formas nuevas que vuelven todas a ejecutarse tras la última de ellas son una primera
    pasada: de una sola vez (issue 35: la preparación de cuBLAS de una primera llamada mostrada como coste
    por paso); gpu/gemm_new_shapes sin sus pasos sigue siendo recurrente (una M nueva en cada llamada). Las formas nuevas de
    capas distintas (ninguna pareja que difiera en un solo tamaño) en una ventana sin pasos son primeras
    llamadas, de lazy-loading (tl_b200_eager de TraceLens: los cuatro primeros GEMM de vLLM, cada uno
    cargando su kernel).

    Solución:
    Mantén las formas estáticas: rellena o agrupa la dimensión variable en unos pocos tamaños (y calienta
    cada uno antes de perfilar); con torch.compile márcala dinámica; los CUDA graphs también necesitan formas
    estáticas.

steps = { $steps_hit ->
    [none] la ventana
    [one] el paso { $step_list }
   *[many] los pasos { $step_list }
  }
call-item = { $op } { $dims }: { $wait_us } antes de { $kernel }
message = { $calls } llamadas GEMM con { $shapes } formas nuevas en { steps } esperan { $wait_us } en total entre su
    inicio y su lanzamiento{ $usual ->
        [yes] , frente a { $typical_us } con formas ya vistas
       *[no] {""}
    }: { $new }.{ $has_loads ->
        [yes] {" "}{ $loads } carga(s) de kernel (carga perezosa de CUDA) en ellas: los kernels también son nuevos.
       *[no] {""}
    }{ $has_queries ->
        [yes] {" "}{ $queries } consultas de ocupación registradas en ellas.
       *[no] {""}
    }
advice = { $once ->
    [yes] Las formas nuevas ({ $dims }) son una primera pasada: vuelven a ejecutarse después sin la espera, así que
        cuBLAS eligió sus kernels una sola vez. Calienta cada forma antes de perfilar (una iteración, o
        torch.profiler.schedule(wait=1, warmup=1, active=N)); nada se repite en régimen estable.
   *[no] La forma del GEMM cambia de una llamada a otra ({ $dims }): rellena o agrupa la dimensión variable en unos
        pocos tamaños y calienta cada uno antes de perfilar; con torch.compile márcala dinámica; los CUDA graphs
        también necesitan formas estáticas.
  }
fix = { $first_pass ->
    [yes] { $op } recibe { $shapes } formas nuevas en { steps } ({ $chain }), { $wait_us } antes de sus lanzamientos
        mientras cuBLAS elige kernels: calienta cada forma antes de perfilar y limita las formas a unos pocos tamaños.
   *[no] { $op } recibe una forma nueva en cada paso ({ $chain }), { $per_step_us } por paso antes de su lanzamiento
        mientras cuBLAS elige un kernel: rellena o agrupa las formas en unos pocos tamaños.
  }
basis = la GPU inactiva desde el inicio de cada GEMM con forma nueva hasta su lanzamiento ({ $idle_us }){ $usual ->
        [yes] , menos la espera del op con formas ya vistas
       *[no] , una cota superior (sin formas ya vistas con que comparar)
    }, { $per ->
        [once] una sola vez, una primera pasada
        [step] por paso
       *[window] sobre la ventana
    }
shape-note = forma nueva { $dims }: { $wait_us } antes de su lanzamiento
kernel-note = el kernel elegido, { $dur_us }
