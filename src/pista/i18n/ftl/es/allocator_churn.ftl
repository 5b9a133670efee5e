## allocator-churn: en español
title = La memoria se reserva y libera con llamadas al runtime de CUDA en cada paso

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Llamadas de reserva de memoria al runtime dentro de los pasos, paso tras paso: `cudaMalloc`/
    `cudaFree` (y las de memoria fijada `cudaHostAlloc`/`cudaMallocHost`/`cudaFreeHost`, y las `cuMem*`
    del driver con segmentos expandibles), y las de HIP (`hipMalloc`/`hipFree`, `hipHostMalloc`/
    `hipHostFree`). El asignador con caché de PyTorch solo las hace cuando falla: cuando
    `torch.cuda.empty_cache()` se ejecuta en el bucle y devuelve la caché, cuando las formas cambian o la
    memoria está fragmentada, cuando una reserva falla y vacía la caché para reintentar, o cuando la caché
    está desactivada (`PYTORCH_NO_CUDA_MEMORY_CACHING=1`). Una ventana sin pasos se lee como uno solo, donde
    las liberaciones se repiten (MIN_WINDOW_FREES): tl_mi300_ddp_resnet18_train de TraceLens, 1,360 hipFree
    en 3.35 s de una ventana de 3.39 s, casi todo dentro de operaciones, se leía antes como coste de
    despacho.

    Por qué:
    `cudaFree` sincroniza el dispositivo (el host espera a que la GPU se vacíe y luego la GPU espera al
    host), y un `cudaMalloc` de un bloque grande cuesta de decenas de µs a milisegundos de host en los
    que no se lanza nada. Una caché caliente sirve los mismos tensores en alrededor de un µs.

    Ejemplo:
    gpu/allocator_churn en una H200: 4x (randn 4096x2048 bf16, matmul, relu_) y después
    `torch.cuda.empty_cache()` en cada paso. Cada paso llama dos veces a cudaMalloc (bajo
    `aten::empty` en `aten::randn` y bajo `aten::mm`, 42-77 µs cada una) y dos veces a cudaFree al final
    del paso (35-133 µs, la primera esperando a que la GPU se vacíe): 6 + 6 llamadas en 3 pasos, 830 µs
    de host, y la GPU inactiva durante la mayor parte.

    Impacto:
    Por paso: el tiempo que la GPU está inactiva desde el inicio de cada llamada hasta que empieza el
    siguiente trabajo de GPU (dentro del paso), con los intervalos de las llamadas unidos: el tiempo de
    host de las llamadas que ningún trabajo de GPU oculta más la inactividad que dejan detrás. Cota
    superior (la operación que sigue a una llamada conserva su propio despacho). gpu/allocator_churn
    296 µs por paso (49.9%, crítico). Las llamadas en un solo paso (el primer workspace de cuBLAS de
    seed_mm64_cold, el tamaño nuevo de gpu/gemm_new_shapes) son crecimiento de una sola vez, no
    rotación: son de cold-start. Nueva en el issue 15.

    Solución:
    Quita `torch.cuda.empty_cache()` del bucle (llámalo, si acaso, entre fases); donde las
    liberaciones corren dentro de operaciones, mira `num_alloc_retries` (baja el pico de memoria) y que la
    caché esté activada; mantén formas
    estáticas o agrupadas para que los bloques en caché vuelvan a servir; prueba
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` contra la fragmentación; mira
    `torch.cuda.memory_stats()` (`num_alloc_retries`, `num_device_alloc`).

per = { $has_steps ->
    [yes] por paso
   *[no] en la ventana
  }
call-item = { $name } { $per_step }x { per } bajo { $has_under ->
        [yes] { $under }
       *[no] ninguna operación
    }, { $host_us } { per }
message = { $calls }: { $has_steps ->
        [yes] el asignador con caché falla en { $steps_with_calls } de { $steps } pasos
       *[no] el asignador con caché falla a lo largo de toda la ventana (no tiene pasos)
    }. Las llamadas ocupan { $host_us } de host { per } y dejan la GPU inactiva { $idle_us } { per }, el { $share }%
    { $has_steps ->
        [yes] del paso
       *[no] de la ventana
    }.{ $frees_in_ops ->
        [yes] {" "}La mayor parte del tiempo de las liberaciones está dentro de operaciones: la memoria se devuelve
            mientras corren las operaciones, así que el asignador libera su caché para reintentar reservas que
            fallaron (memoria al límite), o la caché está desactivada.
       *[no] {""}
    }
advice = { $first ->
        [grad-mode] La inferencia corre en modo grad (inference-grad-mode): las salidas de cada paso, y una caché KV,
            mantienen vivos su grafo de autograd y sus tensores guardados, así que la memoria crece y el asignador
            pide más a CUDA; torch.inference_mode() quita la causa.{" "}
        [in-ops] Las liberaciones corren dentro de operaciones, no tras un empty_cache(): mira
            torch.cuda.memory_stats()['num_alloc_retries'] (el asignador liberando su caché para reintentar: baja el
            pico de memoria con un lote menor o checkpointing de activaciones) y que PYTORCH_NO_CUDA_MEMORY_CACHING no
            esté definida (caché desactivada: cada tensor es una reserva y una liberación).{" "}
        [outside-ops] cudaFree se llama fuera de cualquier operación, es decir torch.cuda.empty_cache() (o un vaciado
            de la caché) dentro del bucle: quítalo, o llámalo solo entre fases, para que el siguiente paso reutilice
            los bloques en caché.{" "}
       *[none] {""}
    }Mantén estáticas las formas de los tensores (o agrúpalas por tamaños) para que los bloques en caché vuelvan a
    servir, prueba PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True contra la fragmentación y vigila
    torch.cuda.memory_stats()['num_device_alloc'] y ['num_alloc_retries'] entre pasos.
fix = { $names } se llaman { $per_step } veces { per }, { $idle_us } de GPU inactiva { per }: { $change ->
        [grad-mode] ejecuta la inferencia dentro de torch.inference_mode() (el modo grad mantiene vivo el grafo de
            cada paso)
        [in-ops] las liberaciones corren dentro de operaciones: mira num_alloc_retries (memoria al límite) y que la
            caché esté activada
        [outside-ops] quita torch.cuda.empty_cache() del bucle
       *[static] mantén formas estáticas o usa PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True para que la caché
            acierte
    }
basis = GPU inactiva desde el inicio de cada llamada de reserva o liberación hasta el siguiente trabajo de GPU, por
    paso, con los intervalos de las llamadas unidos (cota superior: la operación que sigue a una llamada conserva su
    propio tiempo de despacho)
alloc-note = bajo { $has_under ->
        [yes] { $under }
       *[no] ninguna operación
    }: host { $host_us }, GPU ocupada { $busy_us } de ese tiempo
