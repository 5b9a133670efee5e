## pageable-memcpy: en español
title = Copias entre la GPU y memoria de host paginable

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Copias host-dispositivo desde o hacia memoria de host paginable (normal, no fijada): la línea de la GPU
    muestra `Memcpy HtoD (Pageable -> Device)` o `Memcpy DtoH (Device -> Pageable)`, y el cudaMemcpyAsync
    del host dura lo que la copia porque no puede volver antes. La regla agrupa las copias por el op que
    las hizo (`aten::to`, `aten::copy_`) y la región de record_function que lo rodea, y mide cuánto
    bloqueó cada una al host.

    Por qué:
    El motor DMA solo lee memoria fijada (page-locked), así que el driver pasa el búfer paginable por un
    búfer intermedio fijado, trozo a trozo: la copia va a una fracción de la velocidad de PCIe/NVLink-C2C,
    la llamada "asíncrona" bloquea el host todo ese tiempo y no puede solaparse con el cómputo. Además va
    en orden en su stream: si se lanza con kernels aún en cola, los espera, y hasta una copia pequeña
    puede bloquear el host milisegundos y vaciar la cola de la GPU.

    Ejemplo:
    gpu/pageable_memcpy en una H200: un `tensor.to("cuda")` de 64 MiB desde memoria paginable (`aten::to`
    en `pageable_copy`) tarda 9.55 ms en la GPU (7.0 GB/s) y bloquea el host 9.73 ms en cudaMemcpyAsync
    más 15 µs en su sincronización de stream; la misma copia desde memoria fijada con
    `non_blocking=True` tarda 1.21 ms (55 GB/s) y devuelve el control tras 19.5 µs.
    gpu/gpu_idle_dataloader: la copia de 2 MiB del lote en `data_loading` bloquea el host 264 µs por paso
    de 15.4 ms (su cudaMemcpyAsync y su sincronización). La lectura `.cpu()` de 64 MiB de
    gpu/pageable_memcpy (47.9 ms a 1.4 GB/s hacia memoria paginable) también es de esta regla: la copia
    bloquea porque su destino es paginable.

    Impacto:
    Por paso: el tiempo del host bloqueado en las llamadas de cada copia paginable (el cudaMemcpyAsync y la
    sincronización de stream del mismo op) mientras la GPU no calculaba nada, con el tope de la GPU
    inactiva desde el inicio de la llamada hasta el siguiente trabajo tras ella: una copia que espera a
    kernels en cola solo cuesta la inactividad que deja detrás. Es una cota superior: una copia fijada
    sigue ocupando el motor de copia bytes / ancho de banda fijado (1.21 ms por 64 MiB en la H200).
    gpu/pageable_memcpy: 9.71 ms de un paso de 64.6 ms (15%, warning); gpu/gpu_idle_dataloader: 264 µs de
    15.4 ms (1.7%, info); gpu/pageable_behind_kernels, una copia de 256 KiB lanzada tras 4 ms de GEMMs en
    cola: el host se bloquea 3.5 ms por paso, pero la GPU calcula durante casi todo ese tiempo y solo
    cuestan los 154 µs de inactividad que deja detrás (3.7%, info). Una lectura (DtoH) ahorra como mucho
    su paso por memoria paginable, lo que la copia tarda más que una fijada: el host necesita los valores,
    así que con memoria fijada sigue esperando al trabajo encolado antes de la copia (foreign/hta_negq_rank0:
    30 lecturas de 8.6 KB por paso, cada una bloqueando el host hasta 146 ms tras el all-to-all de
    TorchRec, eran el 82% del paso; su paso por memoria paginable son unos µs). Antes era warning para cualquier
    copia de 1 MiB o más; los bytes ya no deciden. Una copia, un hallazgo: toda copia desde o hacia
    memoria paginable es de esta regla, con la sincronización de su op; host-sync se queda con las
    sincronizaciones de los ops que no copian nada paginable (`.item()` lee a través de un búfer fijado).

    Solución:
    Reserva los búferes del host fijados (`torch.empty(..., pin_memory=True)`, `tensor.pin_memory()`,
    `DataLoader(pin_memory=True)`) y copia con `non_blocking=True`; para leer resultados, copia a un
    tensor fijado reservado de antemano con `non_blocking=True` y espera a un evento solo cuando se usa el
    valor.

where = { $op }{ $in_region ->
    [yes] {" "}en '{ $region }'
   *[no] {""}
  }
where-item = { where }
saved = { $read_back ->
    [yes] { $saved_us } de ellos pasando por memoria paginable{ $why ->
            [yes] {" "}(una lectura a memoria fijada sigue esperando a su copia y al trabajo encolado antes)
           *[no] {""}
        }
   *[no] { $saved_us } de ellos con la GPU sin calcular nada
  }
side = { $read_back ->
    [yes] hacia
   *[no] desde
  }
group-item = { where }: { $copies } copia(s) { $direction } { side } memoria paginable ({ $mib } MiB), { $device_us }
    en la GPU a { $gb_s } GB/s{ $has_pinned ->
        [yes] {" "}(copias { $direction } fijadas en esta traza: { $pinned_gb_s } GB/s)
       *[no] {""}
    }; el host se bloquea { $blocked_us }, { saved }
message = { $groups }. En total { $total_us } por paso, el { $share }% del tiempo del paso.
change = { $change ->
    [read-back] copia a un tensor fijado reservado de antemano (dst.copy_(src, non_blocking=True)) y espera a un
        evento CUDA solo donde se usan los valores
    [loader] carga con un DataLoader con pin_memory=True y copia con .to('cuda', non_blocking=True) (su hilo de
        memoria fijada fija los lotes al margen del paso; .pin_memory() en cada lote dentro del bucle reserva memoria
        bloqueada en cada paso y puede ser más lento que la copia paginable)
    [small] crea el tensor en la GPU (torch.tensor(..., device='cuda')) o tenlo en memoria fijada y copia con
        non_blocking=True
   *[pin] ten el origen en memoria fijada (tensor.pin_memory() una vez, fuera del bucle) y copia con
        non_blocking=True; para un lote que se crea de nuevo en cada paso, cópialo a un búfer fijado reservado de
        antemano (buf.copy_(lote)) o créalo en workers del DataLoader con pin_memory=True: .pin_memory() en cada lote
        reserva memoria bloqueada en cada paso y puede ser más lento que la copia paginable
  }
advice = Para { where }: { change }.{ $htod ->
        [yes] {" "}Una copia desde memoria fijada va a toda la velocidad del bus y devuelve el control al host
            enseguida, así que se solapa con el trabajo de la GPU en lugar de bloquear el host.
       *[no] {""}
    }{ $has_others ->
        [yes] {" "}Lo mismo para { $others }.
       *[no] {""}
    }
fix = { where } copia { $mib_call } MiB por llamada { side } memoria paginable y bloquea el host { $step_blocked_us }
    por paso ({ saved }): { change }.
basis = host bloqueado en las llamadas de las copias paginables mientras la GPU no calculaba nada, hasta el
    siguiente trabajo de la GPU (en una lectura, como mucho el paso por memoria paginable, lo que la copia tarda más
    que una fijada), por paso (cota superior: una copia fijada sigue ocupando el motor de copia)
pageable-copy = { $mib } MiB a { $gb_s } GB/s{ $has_pinned ->
        [yes] {" "}(copias fijadas aquí: { $pinned_gb_s } GB/s)
       *[no] {""}
    }
blocked-copy-call = su op bloquea el host { $blocked_us } (llamada de copia y sincronización de stream), { saved }
