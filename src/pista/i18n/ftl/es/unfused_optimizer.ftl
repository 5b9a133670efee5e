## unfused-optimizer: en español
title = El paso del optimizador no está fusionado (foreach o por parámetro)

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El paso del optimizador se ejecuta sin fusionar, con kernels foreach (`aten::_foreach_mul_`,
    `_foreach_lerp_`, `_foreach_addcdiv_`... bajo `Optimizer.step#AdamW.step`, cada uno una pasada de
    `multi_tensor_apply_kernel` sobre todos los parámetros) o con un kernel pequeño por parámetro y
    operación, y ese trabajo es una parte grande del tiempo de GPU o del paso del host. El trabajo de
    GPU del optimizador es el que se lanza bajo `Optimizer.step#<Clase>.step` (`pista.purpose`:
    propósito "optimizer"); su tiempo de host es la duración de ese evento. Sin `Optimizer.step`, también
    cuenta una actualización escrita a mano: un bucle de Python sobre los parámetros que aplica operaciones in
    situ (`buf.mul_(m).add_(p.grad); p.data.add_(buf, alpha=-lr)`) tras el último nodo de autograd de cada paso,
    al menos MIN_UPDATE_OPS en cada paso (savings/h100/optim_manual_sgd: 294 por paso para 98 parámetros; SGD
    fusionado ahorró un 27% sin profiler, 21.7% predicho).

    Por qué:
    AdamW lee y escribe cada parámetro, su gradiente y dos momentos. La implementación foreach hace una
    pasada por memoria por cada operación elemento a elemento (unas ocho: mul, lerp, addcmul, sqrt,
    div, addcdiv...); la fusionada (`fused=True`, un kernel `_fused_adamw_`) hace una sola. En el host,
    foreach despacha además una docena de operaciones y la contabilidad por parámetro (`aten::item` en
    los contadores de pasos), donde la fusionada despacha dos.

    Ejemplo:
    series_mlp_eager en una H200 (4 bloques Linear 1024-4096-1024, AdamW foreach): 48 kernels foreach
    en 3 pasos ocupan 2.233 ms, el 62.6% del tiempo de GPU, y `Optimizer.step#AdamW.step` 1.4 ms de un
    paso de 6.9 ms. gpu/adamw_foreach y gpu/adamw_fused ejecutan el mismo MLP fp32 de las dos formas:
    los kernels del optimizador ocupan 747 µs por paso con foreach y 266 µs fusionados, su tiempo de
    host 761 µs y 267 µs. Sin profiler, el paso del MLP con autocast bf16 baja de 6.1 ms (foreach) a
    3.4 ms con `fused=True` (REVIEW.md); medido de nuevo en la H200 para esta regla (el mismo MLP,
    parámetros fp32 bajo autocast, 40 pasos, dos ejecuciones): 3.16-3.63 ms con foreach y 3.03-3.21 ms
    fusionado, `opt.step()` en el host 0.70-0.77 ms y 0.32-0.36 ms.

    Impacto:
    El tiempo de host propio del optimizador es el de la llamada a Optimizer.step, o, donde un closure
    ejecuta el forward y el backward dentro de ella (el `optimizer.step(closure)` de Lightning), solo lo que
    sigue al último nodo de autograd en ella. Un colectivo lanzado dentro del paso (el all-gather del Shampoo
    distribuido, el de ZeRO) es comunicación, no la actualización: sus kernels no son del optimizador, y el
    tiempo del host en el paso mientras está en vuelo (de su lanzamiento a su final) queda fuera; el mensaje
    lo nombra (hta_sampled_rank0: 53 ms de all-gather por paso y 109 ms de host mientras corría, contados
    antes como del optimizador).
    Por paso, a partir de ese par: la versión fusionada tarda 0.356 del tiempo de GPU G de foreach (S,
    lo ahorrado, es el resto) y 0.351 de su tiempo de host (H ahorrado). Tras cada `Optimizer.step` el
    siguiente trabajo de GPU empieza en N, cuando ha terminado el último kernel del optimizador y su
    propio lanzamiento está en cola (Q). Fusionado, un kernel de G - S corre desde que la GPU termina el
    trabajo encolado antes del primer kernel del paso (P) o desde el final de la llamada más corta (su
    lanzamiento), lo que llegue después; el siguiente trabajo empieza en max(ese final, Q - H), y el
    impacto es N menos eso, como mucho S + H. Así el ahorro de GPU cuenta donde la GPU es el cuello de
    botella y el de host donde la GPU espera los lanzamientos del paso. La última llamada, sin trabajo
    detrás en la ventana, cuenta la media de las demás. Los gemelos con profiler lo comprueban: desde el
    inicio de Optimizer.step hasta el final del paso, gpu/adamw_foreach tarda 490 µs más que
    gpu/adamw_fused (previsto 500) y gpu/adamw_foreach_bf16 442 µs más que su gemelo fusionado (513).
    gpu/gpt2_conv1d (limitado por el host: la GPU ociosa 4.9 de los 6.7 ms de la llamada mientras se
    lanzan 40 kernels uno a uno) 4.16 ms (5.6%; el final "E - S" que usaba antes daba 1.74 ms, donde un
    experto midió fused un 23% más rápido sin profiler); series_mlp_eager 947 µs (13.7%; medido de nuevo
    sin profiler, 0.13-0.42 ms de un paso de ~3.2 ms: el profiler duplica su tiempo de host),
    gpu/gpt_autocast 2.59 ms (10.3%). Un SGD sin momento (un solo `_foreach_add_`, una pasada) no se
    señala: fusionarlo no ahorra pasadas.

    Solución:
    `torch.optim.AdamW(params, fused=True)` (Adam, AdamW y SGD la tienen en CUDA); para otros
    optimizadores, compila el paso (`torch.compile(opt.step)`), que fusiona las operaciones foreach en
    pocos kernels.

step-event = { $has_event ->
    [yes] { $event }
   *[no] un bucle de actualización escrito a mano tras backward()
  }
how = { $how ->
    [foreach] en modo foreach ({ $ops }), { $passes } pasadas sobre los parámetros por llamada donde la versión
        fusionada hace una
    [loop] con un bucle sobre los parámetros (foreach=False, lo predeterminado en CPU), { $ops_per_step } operaciones
        por paso ({ $ops })
    [hand-written] como un bucle de Python sobre los parámetros, { $ops_per_step } operaciones in situ por paso
        ({ $ops4 })
   *[per-parameter] con un kernel por parámetro y operación, { $passes } kernels por llamada donde la versión
        fusionada lanza uno
  }
communication = { $comm ->
    [yes] {" "}Su paso también ejecuta { $comm_op }: { $comm_us } de comunicación en la GPU por paso, y los
        { $comm_wait_us } por paso que el host pasa en el paso mientras está en vuelo quedan fuera de estas cifras:
        eso es comunicación (ver exposed-communication), y fusionar o compilar la actualización no lo acorta.
   *[no] {""}
  }
message = { $device ->
    [cpu] { step-event } se ejecuta { how }: ocupa { $host_us } de cada paso en la CPU. Fusionado conservaría cerca
        de { $kept } de ese tiempo.
   *[gpu] { step-event } se ejecuta { how }: { $kernels_per_step } kernels por paso ocupan { $gpu_us } de GPU (el
        { $gpu_share }% del tiempo del dispositivo) y el host pasa { $host_us } por paso en él, { $exposed_host_us } de
        ellos con la GPU inactiva. La versión fusionada tardaría unos { $gpu_saving_us } menos de GPU y
        { $host_saving_us } menos de host por paso.{ communication }
  }
advice = { $advice_kind ->
    [hand-written] Sustituye el bucle por torch.optim.{ $optimizer }(model.parameters(), ..., fused=True) y
        opt.step(): un solo kernel actualiza todos los parámetros (con sus búferes de momento) en una pasada, donde
        el bucle despacha y lanza una operación por parámetro y operación.
    [cpu] Crea el optimizador con fused=True (torch.optim.{ $optimizer }(params, ..., fused=True), en CPU desde torch
        2.4): una pasada vectorizada por parámetro en lugar de una operación por parámetro y operación.
    [gpu] Crea el optimizador con fused=True (torch.optim.{ $optimizer }(params, ..., fused=True)): un solo kernel
        actualiza todos los parámetros en una pasada por memoria (junto a una pequeña suma a los contadores de
        pasos), y el host despacha dos operaciones en lugar de una docena de operaciones foreach más la contabilidad
        por parámetro de los contadores de pasos.
   *[compile] { $optimizer } no tiene implementación fusionada: compila su paso (opt.step = torch.compile(opt.step))
        para que las operaciones foreach se conviertan en pocos kernels fusionados, o pasa a Adam/AdamW/SGD con
        fused=True si te sirve.
  }
change = { $fusable ->
    [yes] torch.optim.{ $optimizer }(..., fused=True)
   *[no] compila el paso (torch.compile(opt.step))
  }
mode-name = { $mode ->
    [foreach] foreach
   *[other] por parámetro
  }
fix = { $fix_kind ->
    [cpu] { step-event } ocupa { $host_us } de CPU por paso en modo { mode-name }: { change }
    [hand-written] { step-event } ejecuta { $ops_per_step } operaciones in situ por paso ({ $ops3 }): usa { change }
        y opt.step()
   *[other] { step-event } ocupa { $gpu_us } de GPU y { $exposed_host_us } de host expuesto por paso en modo
        { mode-name }: { change }
  }
basis = { $device ->
    [cpu] el tiempo de CPU de Optimizer.step por paso por 1 - { $host_ratio }, la parte que conservó la versión
        fusionada de AdamW en una AMD EPYC de 2 núcleos (torch 2.13; gpu/cpu_adamw_loop frente a
        gpu/cpu_adamw_fused); una estimación para otros modelos y CPU
   *[gpu] cuánto antes podría empezar el trabajo de GPU que sigue a cada Optimizer.step si sus kernels tardaran
        { $gpu_ratio } de su tiempo y su llamada en el host { $host_ratio } del suyo, como la versión fusionada en
        la H200 (gpu/adamw_foreach frente a gpu/adamw_fused, el mismo MLP), por paso; una estimación para otros
        modelos
  }
step-call = host { $host_us } ({ $exposed_host_us } con la GPU inactiva), lanzó { $kernels } kernel(s), { $gpu_us }
    de GPU
cpu-step-call = { $host_us } en la CPU, { $ops } operación(es) aten despachadas
optimizer-kernel = kernel del optimizador lanzado por { $has_op ->
    [yes] { $op }
   *[no] una operación desconocida
  }
