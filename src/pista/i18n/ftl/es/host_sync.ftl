## host-sync: en español
title = Operaciones dentro del paso sincronizan el host con la GPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Operaciones dentro de los pasos que hacen esperar al host a la GPU: `.item()`, `.cpu()`, `.tolist()`,
    imprimir o decidir sobre un tensor CUDA. En la traza son un cudaStreamSynchronize (o
    cudaDeviceSynchronize) bajo un op aten como aten::item > aten::_local_scalar_dense, o aten::to >
    aten::_to_copy > aten::copy_ con una copia DtoH. La regla nombra el op que sincronizó, lo cuenta por
    paso y suma lo que costó: el tiempo bloqueado más la GPU inactiva que sigue.

    Por qué:
    El trabajo CUDA es asíncrono: el host va por delante y mantiene llena la cola de la GPU. Una
    sincronización la vacía; después, la GPU espera a cada lanzamiento del siguiente op.

    Ejemplo:
    gpu/host_sync_item en una H200, 8x (matmul bf16 de 1024², luego `.float().mean().item()`) por paso:
    24 llamadas aten::item en 3 pasos, cada una con una copia DtoH y un cudaStreamSynchronize de ~6.3 µs:
    el host se bloquea 265 µs en total y la GPU espera otros 801 µs, el 36% del tiempo del paso.

    Impacto:
    Por paso y por sincronización: la GPU inactiva tras ella hasta el siguiente trabajo, como mucho el
    trabajo de GPU al que esperó el host. Sin la sincronización el host despacharía el siguiente op
    mientras ese trabajo corre; la inactividad más allá es el propio despacho (de overhead-bound).
    gpu/tf32_gemm (torch.cuda.synchronize() tras un GEMM de 340 µs): 21 µs por paso, como lo medido sin
    profiler (342 -> 367 µs). gpu/host_sync_item: 8 `.item()` por paso vacían ~1 µs de matmul cada uno y
    luego el host tarda ~40 µs en despachar: unos µs por paso, info (medido sin profiler: 514 -> 521 µs
    por paso sin ellos). Antes contaba toda la inactividad tras cada sincronización (345 µs, 38%). Por
    debajo del 5% del paso es info, como coste latente: crece cuando el host es más rápido (un .item()
    por paso en GPT n=2: +20%), y un paso que sincroniza no se puede capturar como CUDA graph.
    Reproducido (pista.engine), el arreglo quita la sentencia, no solo la espera: una lectura de valor se va
    con su op y el frame de Python que solo la llamaba, `torch.cuda.synchronize()` con su envoltorio (sus
    frames, o hasta SYNC_WRAPPER_GAP_NS del hueco anterior), un indexado con máscara booleana con su backward
    (la forma fija con una multiplicación o torch.where), y las lecturas tras la misma op en un bucle sobre
    tensores agrupan esas ops (savings/h100: sync_cuda_synchronize 7.3% previsto para 12.9% medido,
    sync_bool_mask 12.5% para 9.6%, sync_per_param 17.6% para 20.5%). Una sincronización que espera a
    trabajo lanzado antes de la ventana (el torch.cuda.synchronize() de un arnés al empezar el paso)
    conserva su espera: el arreglo ahorra la GPU inactiva que deja tras ella, no el trabajo anterior
    (Qwen1.5-0.5B de TraceLens: 283 µs de una espera de 14.1 ms en la H100, 632 µs de 13.1 ms en la
    MI300X, reproducidos antes como el 3.1% y el 8.6% del paso).

    Solución:
    Deja los valores en la GPU (acumula las pérdidas en un tensor, `.item()` cada N pasos), saca las
    comprobaciones del bucle, copia con `non_blocking=True` a memoria fijada y encuentra las
    sincronizaciones ocultas con `torch.cuda.set_sync_debug_mode("warn")`.

step-item = { $has_step ->
    [yes] paso { $step }: { $calls }
   *[no] sin paso: { $calls }
  }
op-item = { $name } { $count }x ({ $per_step }; { $chain }): host bloqueado { $blocked_us }, { $stall_us } de
    GPU inactiva causada
message = { $syncs } llamadas que sincronizan en { $steps } paso(s): { $ops }. En total dejaron la GPU inactiva
    { $stall_us } por paso.{ $latent ->
        [yes] {" "}Sale barato mientras el host es el cuello de botella; cuando el host vaya por delante, cada
            sincronización vacía la cola de la GPU y cuesta la latencia de lanzamiento de un paso, y un paso que
            sincroniza no se puede capturar como CUDA graph.
       *[no] {""}
    }
advice = { $explicit ->
    [yes] Saca { $op } del paso ({ $chain }): vacía la cola de la GPU y la GPU espera después a cada lanzamiento
        que sigue. Mide con eventos CUDA (torch.cuda.Event(enable_timing=True)) y sincroniza solo donde el host
        necesite un resultado.
   *[no] { $checks ->
        [yes] El paso comprueba valores en el host ({ $check } > { $op }: un assert o un if sobre un tensor):
            quita la comprobación del paso o hazla cada N pasos; un assert puede quedarse en la GPU con
            torch._assert_async(cond), que falla sin sincronizar.
       *[no] Deja los resultados en la GPU y léelos pocas veces (acumula y haz .item() cada N pasos); copia con
            non_blocking=True a memoria fijada; encuentra las sincronizaciones ocultas con
            torch.cuda.set_sync_debug_mode('warn').
    }
  }
fix = { $explicit ->
    [yes] { $chain } vacía la cola de la GPU { $per_step } veces por paso, { $op_stall_us } de GPU inactiva por
        paso: quita la sincronización del paso (mide con eventos CUDA).
   *[no] { $checks ->
        [yes] { $check } > { $op } comprueba un valor en el host { $per_step } veces por paso, cada comprobación
            una sincronización que vacía la cola de la GPU: quita la comprobación o hazla cada N pasos (un
            assert: torch._assert_async(cond)).
       *[no] { $op } sincroniza el host { $per_step } veces por paso ({ $chain }), { $op_stall_us } por paso con
            la GPU esperando: deja el valor en la GPU y léelo una vez cada N pasos.
    }
  }
basis = por sincronización, la GPU inactiva tras ella hasta el siguiente trabajo, como mucho el trabajo de GPU al
    que esperó (lo que el host podría haber despachado mientras), por paso
synced-via = sincroniza con { $via }; el host se bloquea { $blocked_us }, { $stall_us } con la GPU inactiva
    después
blocked = host bloqueado { $blocked_us }, GPU ocupada { $busy_us }
