## dead-window: en español
title = Ventana muerta: una región espera mucho antes de su primer lanzamiento

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Una región de record_function (un ProfilerStep o una región del usuario como `matmul_add`) pasa mucho
    tiempo (más de 1 ms) antes de lanzar su primer kernel (en una traza solo de CPU: antes de su primer op
    aten::), mucho más que en sus otras llamadas (regiones vistas una vez: basta el 1 ms): hay preparación
    única dentro de la ventana. Las primeras llamadas posteriores en la misma llamada a la región (ops que
    cargan sus kernels CUDA) son parte de la misma preparación y cuentan con ella.

    Por qué:
    La preparación (handle y workspace de cuBLAS, heurísticas de la biblioteca, carga perezosa de módulos
    CUDA, carga del grafo compilado) se paga una vez, pero cae dentro de la primera llamada: esas
    operaciones parecen lentas y la GPU espera. No es lo que cuesta el programa por paso.

    Ejemplo:
    `gpu/window_sync_cold` (el primer `matmul_add` del proceso, sin schedule): la región tardó 95.921 ms
    hasta su primer lanzamiento (cuLaunchKernelEx en aten::mm), 91.7 ms de ello preparación sin trazar
    dentro de aten::mm (cuBLAS), y luego la primera llamada a aten::add tardó 15.1 ms más (su kernel se
    cargó de forma perezosa). `gpu/eval_first_call`: una rama de evaluación (`eval_metrics`) ejecutada por
    primera vez en el paso 3 espera 19.6 ms en su copia bf16 -> fp32 antes del primer lanzamiento, y sus
    primeras llamadas (la carga del kernel de la propia copia, cross-entropy, argmax, eq, mean) tardan
    126.0 ms más.

    Impacto:
    Única vez: el tiempo de GPU inactiva desde el inicio de la región hasta su primer lanzamiento, más el de
    las primeras llamadas posteriores en la misma llamada, menos la espera de sus otras llamadas, repartido
    entre los pasos de la ventana. gpu/window_sync_cold: 111.1 ms, el 99% de su ventana (crítico);
    gpu/eval_first_call: 145.6 ms en 3 pasos, 48.5 ms por paso frente a un paso mediano de 3.8 ms (crítico).
    La región debe esperar por sí misma: la petición de búfer del profiler dentro de la espera no cuenta para
    el 1 ms ni para las 5 veces (gpu/window_sync_warm espera 2.0 ms, 1.8 ms de ellos del profiler: hallazgo
    de profiler-overhead), pero pertenece a este hallazgo cuando salta. Una ventana dentro de un primer paso
    frío es de cold-start (los 107 ms de seed_mm64_cold, antes informados aquí); una dentro de la
    compilación, de recompilation.

    Una primera llamada sin evento de carga (CUPTI antiguo, ROCm) cuenta si arranca CUDA
    (_one_time.startup_ops) durante 1 ms o más pasada la espera (foreign/hta_alexnet: los 10.0 s de la
    primera convolución tras el primer lanzamiento de la región, de nadie antes). Una espera que es en más
    de la mitad las peticiones de búfer del propio profiler es de profiler-overhead, y las primeras llamadas
    que siguen, de lazy-loading (tl_b200_eager de TraceLens: 2.6 ms, 1.5 ms de ellos un Activity Buffer
    Request; issue 35). Una espera que es en más de la mitad trabajo propio del host tampoco es preparación:
    los frames de Python, las sincronizaciones que vacían trabajo encolado antes de la región y los ops cuyas
    otras llamadas tardan lo mismo son lo que la región hace cada vez (trazas de TraceLens reservadas:
    los 218 ms de preprocesado de VideoMAE por vídeo de tl_h100_timesformer, antes el 57% de su ventana
    'una sola vez'; el cudaDeviceSynchronize de 14.1 ms del arnés de tl_h100_qwen05, esperando a 500
    kernels anteriores); por debajo de esa parte su tiempo queda fuera del impacto.

    Solución:
    Calienta fuera del profiler: ejecuta el paso (cada forma, cada rama) unas veces antes de perfilar, o usa
    `torch.profiler.schedule(wait=1, warmup=1, active=N)` para que la preparación quede fuera de la ventana.

target = { $target ->
    [launch] lanzamiento de kernel
   *[aten] op aten::
  }
in-step = { $in_step ->
    [yes] {" "}(paso { $step })
   *[no] {""}
  }
schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $steps })
# el schedule como la otra salida, salvo que el schedule de la traza ya calentara
or-schedule = { $warmed_up ->
    [yes] {" "}(los pasos de calentamiento del schedule no la ejecutaron)
   *[no] , o perfila con { schedule }
  }
call-item = { $name } { $us }
message = '{ $region }'{ in-step } tardó { $gap_us } hasta su primer { target } ({ $first_target }{ $has_op ->
        [yes] {" "}dentro de { $in_op }
       *[no] {""}
    }){ $has_typical ->
        [yes] , { $ratio } veces los { $typical_us } de sus otras llamadas
       *[no] {""}
    }. { $recorded_us } están en llamadas registradas{ $has_fillers ->
        [yes] {" "}({ $fillers })
       *[no] {""}
    }; { $untraced_us } son preparación sin trazar{ $has_op ->
        [yes] {" "}dentro de { $in_op }
       *[no] {""}
    }.{ $has_profiler ->
        [yes] {" "}Las peticiones de búfer del propio profiler son { $profiler_us } de la espera.
       *[no] {""}
    }{ $has_first_calls ->
        [yes] {" "}Después, primeras llamadas en la misma región (ops que cargan sus kernels CUDA) añaden
            { $first_calls_us }: { $first_calls }.
       *[no] {""}
    }{ $has_loading ->
        [yes] {" "}CUPTI registra { $loading_us } de carga de kernels en ellas; el resto de esas llamadas es
            preparación que no traza (carga de módulos, reservas de memoria).
       *[no] {""}
    }
advice = { $cause ->
    [profiler] Casi toda la espera son las peticiones de búfer del propio profiler, no el programa: perfila con
        { schedule } para que caigan en los pasos de calentamiento.
    [library] La primera llamada a { $in_op } prepara cuBLAS (handle, workspace, elección de kernel) y carga sus
        kernels: ejecuta '{ $region }' una vez antes de perfilar{ or-schedule }.
    [host] '{ $region }' ejecuta mucho código propio antes de su primer op la primera vez (imports, cachés,
        arranque del DataLoader): caliéntala antes de perfilar{ or-schedule }.
   *[first-calls] '{ $region }' ejecuta sus ops por primera vez en el proceso (CUDA carga sus kernels de forma
        perezosa): ejecútala una vez (cada rama y cada forma) antes de perfilar{ or-schedule };
        CUDA_MODULE_LOADING=EAGER adelanta la carga al arranque.
  }
fix = '{ $region }'{ in-step } espera { $gap_us } hasta su primer { target }{ $has_first_calls ->
        [yes] , y sus primeras llamadas añaden { $first_calls_us }
       *[no] {""}
    } (preparación única{ $has_op ->
        [yes] {" "}en { $in_op }
       *[no] {""}
    }): ejecútala una vez antes de perfilar{ or-schedule }.
basis = única vez: la GPU inactiva desde el inicio de la región hasta su primer { target } y en sus primeras
    llamadas posteriores{ $has_typical ->
        [yes] , menos la espera habitual de sus otras llamadas
       *[no] {""}
    }
window-note = desde { $region } hasta su primer { target }
region-note = la región
target-note = su primer { target }{ $has_op ->
        [yes] {" "}dentro de { $in_op }
       *[no] {""}
    }
filler-note = en la ventana, tiempo propio { $us }
first-call-note = una primera llamada (su kernel se carga de forma perezosa), { $us } tras la espera
