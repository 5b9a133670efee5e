## trailing-sync: en español
title = Sincronización al final del paso sin nada que esperar

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Un `torch.cuda.synchronize()` explícito (cudaDeviceSynchronize / cudaStreamSynchronize llamado desde el
    código del usuario, no desde dentro de un op) al final de un paso, cuando quedaba poco o ningún trabajo
    de GPU pendiente: el host paga la llamada y empieza el paso siguiente con la cola de la GPU vacía.

    Por qué:
    Una sincronización solo compensa cuando espera a algo. Al final de un paso cuyos kernels ya
    terminaron no compra nada: cuesta la propia llamada e impide que el host encole los lanzamientos del
    paso siguiente mientras la GPU se vacía, así que CPU y GPU dejan de solaparse. Una sincronización que
    espera a trabajo real y largo de la GPU (un GEMM fp32 de 2.6 ms) no es este problema: ahí el tiempo es
    de la GPU.

    Ejemplo:
    `matmul_add` a 64x64 en bf16 en una H200 (gpu/trailing_sync), y después `torch.cuda.synchronize()` en
    una región `sync` en cada paso: en el paso 2 el cudaDeviceSynchronize dura 3.799 µs con 0 µs de trabajo
    pendiente (su último kernel terminó 26 µs antes); en los pasos 2-4 las tres sincronizaciones suman
    9.887 µs, el 2.9% de los 344 µs de pasos.

    Impacto:
    Por paso: lo que cuesta de verdad cada sincronización, su duración con el tope de la GPU inactiva
    desde su inicio hasta el siguiente trabajo de la GPU (o su final, en el último paso). Una
    sincronización sin nada pendiente cuesta su propia llamada y nada más (la GPU no tenía nada que hacer
    de todos modos): gpu/trailing_sync 3.3 µs de un paso de 114 µs (2.9%, info), gpu/capture_mm64_sync
    10.9 µs de 325 µs (3.4%, info); las de 14 µs de los pasos de 15 ms de gpu/gpu_idle_dataloader (0.1%) y
    las de fin de ventana de gpu/window_sync_* (menos del 1% de la ventana) no se reportan. Antes era
    warning a partir de 1 ms de sincronización en total; ahora la severidad sigue a la parte del paso. El
    cudaDeviceSynchronize que torch.profiler emite al parar es del profiler y nunca cuenta.

    Solución:
    Quita la sincronización de cada paso; sincroniza solo donde el host necesita un resultado (registros
    cada N pasos, el final de una época) y mide el trabajo de GPU con eventos CUDA
    (`torch.cuda.Event(enable_timing=True)`) en lugar de sync + reloj de pared.

where = { $in_region ->
    [yes] {" "}en '{ $region }'
   *[no] {""}
  }
steps = { $steps_hit ->
    [none] la ventana
    [one] el paso { $step_list }
   *[many] los pasos { $step_list }
  }
message = { $syncs } llamada(s) { $name }{ where } al final de { steps } esperan poco o ningún trabajo de GPU: la
    más larga dura { $longest_us } con { $outstanding_us } de trabajo pendiente{ $idle_before ->
        [yes] {" "}(la GPU llevaba { $idle_before_us } inactiva)
       *[no] {""}
    }. En total { $sync_us }; cuestan { $per_step_us } por paso, el { $share }% del tiempo del paso{ $outstanding ->
        [no] : las propias llamadas, porque la GPU no tenía nada pendiente.
       *[yes] .
    }
advice = Quita el { $call } de cada paso{ where }: no espera a nada. Sincroniza solo donde el host necesita un
    resultado (registros cada N pasos, el final de una época) y mide el trabajo de GPU con eventos CUDA
    (torch.cuda.Event(enable_timing=True)) en lugar de sync + reloj de pared.
fix = { $name }{ where } cierra cada paso con { $outstanding_us } de trabajo de GPU pendiente y cuesta
    { $per_step_us } por paso: quita el { $call } de cada paso y mide con eventos CUDA.
basis = la duración de las sincronizaciones, con el tope de la GPU inactiva desde el inicio de cada una hasta el
    siguiente trabajo de la GPU, por paso
idle-sync = { $outstanding_us } de trabajo de GPU pendiente{ where }; cuesta { $saved_us }
