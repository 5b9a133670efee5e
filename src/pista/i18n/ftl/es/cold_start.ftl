## cold-start: en español
title = Arranque en frío: el primer paso es mucho más lento que el resto

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El primer paso registrado tarda mucho más que los siguientes: trabajo único (creación del contexto CUDA
    y del handle de cuBLAS, carga perezosa de módulos, crecimiento del asignador, la primera petición de
    búfer del profiler) cayó dentro de la ventana perfilada. Sin eventos ProfilerStep se compara la primera
    de varias llamadas a la misma región record_function de nivel superior con las siguientes; sin regiones
    tampoco, la primera iteración de un modelo compilado (de una llamada de nivel superior a su
    `Torch-Compiled Region` a la siguiente) con las siguientes.

    Por qué:
    Un paso en frío no es lo que el programa hace en régimen estable: sus operaciones parecen muchas veces
    más lentas de lo que son, y cada total de la tabla (y cada otra regla) se inclina hacia el calentamiento.

    Ejemplo:
    `seed_mm64_cold` (matmul_add de 64x64, `schedule(wait=0, warmup=0, active=3)`, sin calentamiento): el
    paso 0 tardó 137.932 ms frente a una mediana de 256.6 µs en los pasos 1-2, 537 veces más; el tiempo
    propio (sin trazar) de aten::mm es 102.6 ms y el de aten::add 24.5 ms, las primeras llamadas a cuBLAS y
    a los kernels elementwise; también contiene la petición de búfer del profiler (2.5 ms), 5 cargas de
    módulos (0.6 ms) y 32 consultas de ocupación (42 µs).

    Impacto:
    Única vez: el tiempo de GPU inactiva del primer paso por encima de la mediana de los demás (sin la
    compilación, que es de recompilation), repartido entre los pasos de la ventana. seed_mm64_cold: 137.7 ms
    en 3 pasos, 45.9 ms por paso frente a un paso mediano de 368 µs (crítico). Este hallazgo es dueño de
    todo el primer paso: dead-window, profiler-overhead, gemm-heuristics y lazy-loading no dicen nada de los
    eventos de dentro (antes la semilla daba cinco hallazgos para este único paso). El paso debe estar frío
    por sí mismo: la primera llamada de seed_mm4096_compile_cold es 7.4 veces la segunda, pero 2.9 ms de sus
    3.7 ms de exceso son la petición de búfer del profiler, que informa profiler-overhead. La compilación es
    de recompilation: el paso 0 de gpu/compile_warmup tarda 2.5 s, 2.41 s de ellos compilando; los 86 ms de
    GPU inactiva que quedan (69 ms en el primer aten::mm del grafo compilado) son de este hallazgo, 28.8 ms
    por paso.

    Solución:
    Ejecuta unas iteraciones antes de perfilar, o deja que el profiler se las salte:
    `torch.profiler.schedule(wait=1, warmup=1, active=3)`; lee solo los pasos estables.

first = { $kind ->
    [step] el paso { $step }
    [iteration] la primera iteración (de la primera llamada a '{ $name }' a la siguiente)
    [update] la primera iteración (hasta el final del primer '{ $name }')
   *[region] la primera llamada a '{ $name }'
  }
First = { $kind ->
    [step] El paso { $step }
    [iteration] La primera iteración (de la primera llamada a '{ $name }' a la siguiente)
    [update] La primera iteración (hasta el final del primer '{ $name }')
   *[region] La primera llamada a '{ $name }'
  }
others = { $kind ->
    [step] { $other_steps ->
        [one] el paso { $other_first }
       *[many] los pasos { $other_first }-{ $other_last }
    }
    [iteration] las { $others } iteraciones posteriores
    [update] las { $others } iteraciones posteriores
   *[region] las { $others } llamadas posteriores
  }
schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $steps })
op-item = { $name } { $us } (normalmente { $typical_us })
message = { First } tardó { $first_us }{ $has_compile ->
        [yes] {" "}({ $own_us } sin contar la compilación, { $compile_us }{ $has_profiler ->
            [yes] {" "}ni los eventos propios del profiler, { $profiler_us }
           *[no] {""}
        })
       *[no] { $has_profiler ->
            [yes] {" "}({ $own_us } sin contar los eventos propios del profiler, { $profiler_us })
           *[no] {""}
        }
    }, { $ratio } veces la mediana de { $median_us } de { others }: se perfiló la preparación inicial.{ $has_ops ->
        [yes] {" "}Casi todo es tiempo propio de { $ops }.
       *[no] {""}
    }{ $has_loading ->
        [yes] {" "}También contiene carga de módulos CUDA, { $loading_us }{ $has_queries ->
            [yes] ; { $queries } consultas de ocupación, { $query_us }.
           *[no] .
        }
       *[no] { $has_queries ->
            [yes] {" "}También contiene { $queries } consultas de ocupación, { $query_us }.
           *[no] {""}
        }
    }
advice = { $cause ->
    [profiler] Casi todo son las peticiones de búfer del propio profiler, no el programa: perfila con
        { schedule } para que caigan en los pasos de calentamiento, y lee solo los pasos estables.
    [library] { $gpu ->
        [no] La primera llamada a { $op } prepara la biblioteca de GEMM de la CPU (oneDNN/MKL: su pool de hilos,
            el empaquetado de pesos, la elección de kernel): ejecuta el paso una vez antes de perfilar, o perfila
            con { schedule } y lee solo los pasos estables.
       *[yes] La primera llamada a { $op } prepara cuBLAS (handle, workspace, elección de kernel) y carga sus
            kernels: ejecuta el paso una vez antes de perfilar, o perfila con { schedule } y lee solo los pasos
            estables.
    }
    [host] El Python propio de { first } (fuera de cualquier op) es lento la primera vez (imports, cachés,
        arranque del DataLoader): calienta antes de perfilar, o perfila con { schedule }.
   *[first-calls] { $gpu ->
        [no] Las primeras llamadas a { $op_names } reservan memoria y preparan sus kernels de CPU: ejecuta el
            paso una vez (cada rama y cada forma) antes de perfilar, o perfila con { schedule }.
       *[yes] Las primeras llamadas a { $op_names } cargan sus kernels CUDA y reservan memoria: ejecuta el paso
            una vez (cada rama y cada forma) antes de perfilar, o perfila con { schedule };
            CUDA_MODULE_LOADING=EAGER adelanta la carga al arranque.
    }
  }
fix = { First } tarda { $first_us } frente a { $median_us } del resto{ $has_ops ->
        [yes] , { $op_us } en { $op }
       *[no] {""}
    } (preparación única): calienta antes de perfilar con { schedule }.
basis = { $kind ->
    [step] única vez: la GPU inactiva en el paso { $step } por encima de la mediana de los demás pasos
    [iteration] única vez: la GPU inactiva en la primera iteración por encima de la mediana de las posteriores
    [update] única vez: la GPU inactiva en la primera iteración por encima de la mediana de las posteriores
   *[region] única vez: la GPU inactiva en la primera llamada a '{ $name }' por encima de la mediana de las
        posteriores
  }
first-note = { $ratio } veces la mediana de { $median_us } de los otros { $others }
op-note = tiempo propio { $us }; normalmente { $typical_us }
profiler-note = trabajo propio del profiler, { $us }
steady-note = uno estable, { $us }, para comparar
