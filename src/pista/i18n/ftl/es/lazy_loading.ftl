## lazy-loading: en español
title = Primeras llamadas dentro de la ventana: CUDA carga sus kernels de forma perezosa

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Eventos "Runtime Triggered Module Loading" / "Lazy Function Loading" en la línea de sobrecarga del
    profiler dentro de la ventana: CUDA cargó un kernel la primera vez que hizo falta (carga perezosa, el
    `CUDA_MODULE_LOADING=LAZY` por defecto desde CUDA 11.7) mientras el programa corría. El op que contiene
    la carga se ejecuta por primera vez en el proceso, y esa primera llamada cuesta mucho más que el propio
    evento de carga: decenas de ms de preparación que nada registra, en esta H200.

    Por qué:
    Una primera llamada se paga una vez por kernel, pero cae dentro del paso que ejecuta el op por primera
    vez (una rama tomada cada N pasos, una evaluación, un dtype nuevo): ese paso es muchas veces más ancho, y
    el op parece lento en la tabla. Significa que la ventana contiene primeras llamadas, no régimen estable.

    Ejemplo:
    `gpu/lazy_late_kernel` (el forward de un MLP ya calentado; el segundo paso perfilado calcula además por
    primera vez una pérdida cross-entropy y una precisión, directamente en el paso): 6 Lazy Function Loading
    de 28-68 µs cada una (283 µs), en aten::to (25.1 ms), aten::cross_entropy_loss (62.3 ms), aten::argmax
    (15.9 ms), aten::eq (15.2 ms) y aten::mean (19.2 ms): el paso 3 tarda 140.5 ms frente a 2.5-2.6 ms los
    demás.

    Impacto:
    Única vez: el tiempo de GPU inactiva de las llamadas que contienen una carga (el op más externo que llamó
    el usuario), menos lo que tarda el mismo op en llamadas sin carga, repartido entre los pasos de la
    ventana: gpu/lazy_late_kernel 137.5 ms en 3 pasos, 45.8 ms por paso frente a un paso mediano de 2.6 ms
    (crítico). Antes solo contaban los eventos de carga (el 0.2% de la ventana), aunque las llamadas que los
    contienen cuestan 500 veces más. Las cargas dentro de un primer paso frío, una ventana muerta, un GEMM
    con forma nueva o la compilación son de cold-start, dead-window, gemm-heuristics y recompilation
    (seed_mm64_cold, gpu/window_sync_cold, gpu/gemm_new_shapes, gpu/recompile: 5, 5, 3 y 8 cargas, antes
    informadas aquí).

    Sin eventos de carga (CUDA anterior a 11.7, CUPTI antiguo, ROCm) las mismas primeras llamadas se
    encuentran por su arranque (issue 35): una llamada al runtime de 1 ms o más que no espera, copia ni
    reserva (la creación del contexto, un primer lanzamiento que carga su módulo: tl_normalization de
    TraceLens en una MI300X, 331 ms en un primer hipLaunchKernel), o la primera llamada de un op de torch
    con 5 ms de tiempo de host en ninguna llamada registrada (la preparación de cuBLAS o cuDNN), cada una
    cinco veces las otras llamadas de su nombre o sola. gpu/window_sync_cold sin su región ni eventos de
    carga: 108.7 ms una sola vez, donde antes overhead-bound informaba 109 ms "por paso" de sobrecarga por
    operación con el consejo de torch.compile. Un lanzamiento lento cuyo kernel empieza tras su retorno más
    tarde de lo que duró la llamada esperó sitio en una cola de lanzamientos llena, y uno cuyo op lo muestra
    en varios pasos es lo que el op cuesta en cada paso: ninguno es arranque (foreign/hta_negq_rank0:
    llamadas cudaLaunchKernel de 1-7 ms en NEMetric:update en los 5 pasos, con sus kernels empezando
    164-176 ms después de volver, leídas antes como 48 ms de primeras llamadas).

    Solución:
    Recorre cada camino del código una vez antes de perfilar (iteraciones de calentamiento que tomen la
    rama, o `torch.profiler.schedule(wait=1, warmup=1, active=N)`). `CUDA_MODULE_LOADING=EAGER` lleva la
    carga al arranque (más tiempo de inicio, más memoria) si una primera llamada debe ser rápida.

steps = { $steps_hit ->
    [none] la ventana
    [one] el paso { $step_list }
   *[many] los pasos { $step_list }
  }
schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $active })
call-item = { $op } { $dur_us }{ $has_usual ->
        [yes] {" "}(normalmente { $typical_us })
       *[no] {""}
    }, { $has_loads ->
        [yes] { $loads } carga(s) en { $via }
       *[no] { $has_setup ->
            [yes] { $setup_us } en { $setup }
           *[no] { $setup_us } de preparación que ninguna llamada registra
        }
    }
message = { $has_events ->
    [no] { $count } llamada(s) arrancan CUDA por primera vez en el proceso, en { steps }, { $first_calls_us } en
        total: el contexto, los handles de cuBLAS/cuDNN y la carga de sus kernels (esta traza no registra eventos de
        carga para ellas): { $calls }.
   *[yes] { $count } llamada(s) a ops se ejecutan por primera vez en el proceso, en { steps }: { $events } evento(s)
        de carga de kernels, { $load_us }, pero las llamadas que los contienen tardan { $first_calls_us }: { $calls }.
  }
advice = { $has_events ->
    [no] { $ops } arrancan CUDA dentro de la ventana: un coste de una sola vez del proceso, no del régimen estable.
        Ejecuta una iteración antes de perfilar, o perfila con { schedule }; no hay nada que optimizar en el bucle.
   *[yes] { $ops } se ejecutan por primera vez dentro de la ventana (una rama tomada tarde, una evaluación, un dtype
        nuevo): recorre cada camino del código una vez antes de perfilar, o perfila con { schedule };
        CUDA_MODULE_LOADING=EAGER carga los kernels al arranque si una primera llamada debe ser rápida.
  }
others = { $has_others ->
    [yes] {" "}y { $others } op(s) más
   *[no] {""}
  }
fix = { $has_events ->
    [no] { $op }{ others } arrancan CUDA en { steps } ({ $first_calls_us } de arranque de una sola vez): ejecuta una
        iteración antes de perfilar.
   *[yes] { $op }{ others } se ejecutan por primera vez en { steps } ({ $first_calls_us } de primeras llamadas,
        kernels cargados de forma perezosa): recorre ese camino una vez antes de perfilar.
  }
basis = { $has_events ->
    [no] única vez: la GPU inactiva en las primeras llamadas que arrancan CUDA, menos el tiempo habitual de esos ops
   *[yes] única vez: la GPU inactiva en las llamadas que cargan sus kernels, menos el tiempo habitual de esos ops
  }
call-note = una primera llamada: { $loads } carga(s) de kernel, { $load_us }
load-note = dentro de { $via }
startup-note = { $has_setup ->
    [yes] una primera llamada: { $setup_us } en { $setup }
   *[no] una primera llamada: { $setup_us } de tiempo de host que ninguna llamada registra (preparación)
  }
setup-note = arranque dentro de ella, { $dur_us }
