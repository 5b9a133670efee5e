## outside-wait: en español
title = El host se bloquea sin nada en la cola de la GPU: espera a trabajo que la traza no contiene
severity-exception = info sin ahorro: la espera es a trabajo que la traza no contiene

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Una llamada del runtime que bloquea el host mucho tiempo (una copia, un memset, una sincronización
    dentro de un op) mientras la GPU no ejecuta nada ni tiene nada en cola: no corría ningún trabajo de
    la traza, así que la llamada espera a algo que la traza no muestra (otro proceso o hilo que usa la
    GPU, un lock, la petición anterior de un servidor que solapa su planificación con el trabajo de la
    GPU).

    Por qué:
    Las demás reglas explican el tiempo por el trabajo que la traza registra; este tiempo no tiene ese
    trabajo detrás. La GPU espera, el host espera, y la causa está fuera del proceso o hilo perfilado:
    arreglar algo dentro de la traza no la quita, así que pista la nombra y no promete un ahorro.

    Ejemplo:
    La decodificación de SGLang con Qwen3-8B en una MI300X de TraceLens (foreign/tl_sglang_decode): un
    hipMemcpyWithStream bajo aten::copy_ (el ejecutor de CUDA graphs rellenando sus entradas) bloquea el
    host 463 ms, el 97.7% de la ventana, mientras la GPU ejecuta 29 µs de trabajo; la decodificación en sí
    es un hipGraphLaunch de 1.6 ms y 9.8 ms de kernels. La traza de prefill (tl_sglang_prefilldecode)
    se bloquea 493 ms igual, el 50% de su ventana.

    Impacto:
    Ninguno: la espera es a trabajo que la traza no contiene, así que ningún arreglo que pista pueda
    reproducir respalda un ahorro (su tiempo, por paso y como parte del paso, está en el mensaje). Info,
    como condición a comprobar: la ventana puede no ser un paso estable, u otro proceso puede compartir
    la GPU. Una llamada cuenta desde MIN_CALL_NS, con la GPU ocupada como mucho MAX_BUSY_SHARE de ella, y
    las llamadas juntas desde MIN_STEP_SHARE del paso. Las sincronizaciones explícitas fuera de un op son
    de trailing-sync y host-sync, la del profiler al parar no es de nadie, el arranque dentro de la
    ventana (la creación del contexto en una primera llamada) es de las reglas de coste único, y una
    copia que pasa sus propios bytes por el host (una paginable, o una que mueve STAGING_GB_S o más a lo
    largo de la llamada: la muestra resnet50_num_workers_4 de kineto, 18.4 MiB en 40 ms con la GPU
    inactiva) es de pageable-memcpy. Donde la
    GPU está ocupada durante la llamada, el host espera a trabajo que la traza contiene: de host-sync y
    pageable-memcpy.

    Solución:
    Perfila el otro lado: el hilo o proceso que tiene la GPU o el lock (el planificador de un servidor,
    otro rank, una cadena de datos), con el profiler siguiendo todos los hilos. Si la espera es a
    propósito (un planificador solapado que espera su siguiente lote), perfila una ventana de trabajo
    estable.

call-item = { $name }{ $has_op ->
        [yes] {" "}en { $op }
       *[no] {""}
    } { $us } (GPU ocupada { $busy_us }{ $has_step ->
        [yes] , paso { $step }
       *[no] {""}
    })
message = { $calls } llamada(s) bloquean el host { $blocked_us } por paso, el { $share }% del paso, mientras la GPU
    no ejecuta nada ni tiene nada en cola: { $longest }. No corría ningún trabajo de la traza: la llamada espera a
    algo de fuera (otro proceso o hilo que usa la GPU, un lock, el planificador de un servidor que se solapa con la
    petición anterior). pista no puede decir qué, ni cuánto ahorraría quitarlo.
advice = Perfila el otro lado: el hilo o proceso que tiene la GPU o el lock (el planificador de un servidor, otro
    rank, una cadena de datos), con el profiler siguiendo todos los hilos. Si la espera es a propósito (un
    planificador solapado que espera su siguiente lote), perfila una ventana de trabajo estable.
fix = { $name } bloquea el host { $us } sin nada en la cola de la GPU: busca a qué espera fuera de esta traza (otro
    hilo o proceso)
basis = ninguno: la espera es a trabajo que la traza no contiene (su tiempo está en el mensaje)
wait-note = el host se bloquea con la GPU ocupada { $busy_us }{ $has_op ->
        [yes] , en { $op }
       *[no] {""}
    }
