## queued-wait: en español
title = La GPU está ociosa con su siguiente trabajo ya en cola: espera a algo que la traza no muestra
severity-exception = info sin ahorro para la espera antes del primer trabajo registrado de la GPU en la ventana: la traza no contiene nada de lo que la GPU ejecutó o esperó entonces

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    La GPU no ejecuta nada durante un milisegundo o más mientras el trabajo que acaba esa inactividad ya se
    había lanzado antes de que empezara: su cola tenía trabajo, así que no esperaba al host. Algo que la traza
    no muestra la retuvo: un stream que espera un evento (cudaStreamWaitEvent) de otro stream o de otro rango,
    los pares de un colectivo, nodos de una reproducción de CUDA graph que el profiler no registró o, antes del
    primer trabajo registrado de la GPU en la ventana, trabajo lanzado antes de arrancar el profiler.

    Por qué:
    Las demás reglas leen la inactividad de la GPU como cosa del host: despacho (overhead-bound,
    launch-bound), trabajo del host (host-work, gpu-idle), sincronizaciones. Donde el siguiente trabajo estuvo
    en cola todo el tiempo, ningún arreglo del host acorta la inactividad, y una lectura que la llama
    "equilibrada" o limitada por el host señala el lado equivocado. La espera tiene una causa que la traza solo
    nombra por dónde acaba (una reproducción de grafo, un colectivo, un kernel en un stream), y el usuario tiene
    que buscarla ahí.

    Ejemplo:
    hta_negq_rank0 de HTA (TorchRec con DDP y CUDA graphs, rango 0): 106 ms de un paso de 216 ms la GPU no
    ejecuta nada con trabajo en cola desde 57-197 ms antes; la mayor parte acaba en el primer nodo registrado
    de una reproducción del grafo del backward, encolada en +187 ms y ejecutada 63 ms después de que la GPU
    quedara en silencio en +253 ms. tl_vllm_piecewise_graph de TraceLens (vLLM gpt-oss en una MI300X, una
    ventana sin pasos): la primera copia, lanzada en +2.2 ms, se ejecuta en +151 ms sin nada registrado antes;
    desde entonces los kernels corren seguidos hasta el final de la ventana mientras el host los había lanzado
    todos en +26 ms (su hermana incluida en el repositorio, tl_vllm_graph_exec: 7.8 ms antes de la primera
    copia, el host terminado en +2.3 ms). Todas se leían "equilibradas" sin ningún hallazgo.

    Impacto:
    Dentro de la ventana: los pasos reproducidos con el trabajo que esperó durante esa inactividad
    ejecutándose en cuanto se lanza y su stream está libre (la latencia de lanzamiento típica de la traza): lo
    que ahorraría quitar la espera, una cota superior (una espera a otro rango es el tiempo de ese rango; los
    nodos de grafo que el profiler no registró son trabajo, no inactividad). Un síntoma: el motor lo acredita
    después de las causas. Antes del primer trabajo registrado de la GPU en la ventana: sin ahorro, info
    (SEVERITY_EXCEPTION): la traza no contiene nada de lo que la GPU ejecutó o esperó entonces. La
    inactividad que nombra no es de despacho, así que overhead-bound, launch-bound y many-calls la dejan fuera
    (CLAIMS_FIRST).

    Solución:
    Averigua a qué espera la GPU antes de optimizar el host: las llamadas cudaStreamWaitEvent de los streams
    justo antes de la inactividad y a qué esperan sus eventos; con un colectivo detrás, las trazas de los
    otros rangos en el mismo momento (el último rango en llegar fija la espera); en reproducciones de CUDA
    graphs, un perfil sin grafos, o un profiler que registre sus nodos, muestra qué hacen sus primeros nodos.
    Antes del primer trabajo de la ventana: perfila una ventana que empiece antes de la cola de la GPU
    (schedule(wait=..., warmup=...)).

unit = { $unit ->
    [step] paso
   *[window] ventana
  }
next-name = { $next ->
    [graph] antes del primer nodo registrado de una reproducción de CUDA graph
    [collective] antes de un colectivo
    [stream] antes de otro trabajo en cola en un stream
   *[none] {""}
  }
end-item = { $us } { next-name }
inside = { $stall_us } por { unit } en { $stalls } tramo(s) (el más largo { $longest_us }) la GPU no ejecuta nada
    mientras el trabajo que acaba cada tramo se había lanzado antes de que empezara, { $lo }-{ $hi } ms antes de
    ejecutarse: la GPU no esperaba al host. Por { unit }: { $ends }. Algo que la traza no muestra retuvo a la GPU: un
    stream que espera un evento (cudaStreamWaitEvent) de otro stream o de otro rango, los pares de un colectivo, o
    nodos de un grafo que el profiler no registró (entonces la GPU no estuvo ociosa en absoluto).
first-work = El primer trabajo registrado de la GPU en la ventana ({ $first_name }), lanzado en
    +{ $first_launch_at_us }, solo se ejecuta en +{ $first_start_at_us }: durante { $first_wait_us } la GPU tiene su
    trabajo en cola y nada registrado. Desde entonces está ocupada el { $busy_after }% del resto de la ventana,
    mientras el host lo había lanzado todo en +{ $host_done_at_us }: la GPU, no el host, marca el tiempo de esta
    ventana, y la inactividad antes de su primer trabajo es trabajo o una espera que la traza no contiene (trabajo
    lanzado antes de arrancar el profiler, como el lote anterior de un servidor, u otro proceso en la GPU).
message = { $parts ->
    [both] { inside } { first-work }
    [inside] { inside }
    [first] { first-work }
   *[none] {""}
  }
advice-inside = Averigua a qué espera la GPU antes de optimizar el host: fusionar, compilar o mover trabajo del host
    no acorta esta inactividad. Mira las llamadas cudaStreamWaitEvent de los streams justo antes y a qué esperan sus
    eventos; con un colectivo detrás, compara las trazas de los otros rangos en el mismo momento (el último rango en
    llegar fija la espera); en reproducciones de CUDA graphs, perfila una vez sin grafos, o con un profiler que
    registre sus nodos, para ver qué hacen sus primeros nodos. El ahorro que se muestra es lo que daría como mucho
    quitar la espera.
advice-first = Lee esta ventana como limitada por la GPU: para ver qué ejecuta primero la GPU, arranca el profiler
    antes de lanzar el trabajo que mide, o perfila una ventana más larga con
    torch.profiler.schedule(wait=..., warmup=...); no es el lado del host lo que hay que acelerar aquí.
advice = { $parts ->
    [both] { advice-inside } { advice-first }
    [inside] { advice-inside }
    [first] { advice-first }
   *[none] {""}
  }
fix = { $parts ->
    [both] { fix-inside }
    [inside] { fix-inside }
   *[other] el primer trabajo registrado de la GPU espera { $first_wait_us } tras su lanzamiento sin nada registrado:
        la ventana está limitada por la GPU; perfila una que empiece antes de la cola de la GPU
  }
fix-inside = la GPU espera { $stall_us } por { unit } con su siguiente trabajo en cola (sobre todo { next-name }):
    encuentra la dependencia (eventos de streams, otros rangos, nodos de grafos) antes de optimizar el host
basis = { $parts ->
    [both] { basis-inside }
    [inside] { basis-inside }
   *[other] ninguno: la traza no contiene nada de lo que la GPU ejecutó o esperó antes de su primer trabajo registrado
  }
basis-inside = los pasos reproducidos con el trabajo que esperó durante esa inactividad ejecutándose en cuanto se lanza
    y su stream está libre; cota superior
kind-name = { $kind ->
    [graph] un nodo de una reproducción de CUDA graph
    [collective] un colectivo
    [stream] trabajo en cola
   *[first] el primer trabajo registrado de la ventana
  }
stall-note = GPU ociosa { $idle_us } con { kind-name } lanzado { $ahead_us } antes de ejecutarse
