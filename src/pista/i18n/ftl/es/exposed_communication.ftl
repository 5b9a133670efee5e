## exposed-communication: en español
title = Comunicación expuesta: los pasos esperan a las colectivas

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El paso espera a la comunicación: las colectivas (kernels NCCL en la GPU, el all-reduce de gloo en la
    CPU) corren sin nada más a la vez, así que su tiempo se suma entero al paso en lugar de ocultarse
    tras el backward u otro cómputo.

    Por qué:
    El entrenamiento con datos en paralelo solapa el all-reduce de un bucket de gradientes con el
    backward del siguiente; solo se paga lo que queda cuando se acaba el cómputo. La comunicación
    expuesta crece con el número de rangos y el tamaño del modelo, y es también donde los rangos esperan
    a uno más lento, así que suele ser lo primero que pierde eficiencia al escalar.

    Ejemplo:
    Dos rangos gloo entrenando con DDP un MLP de 4 capas de 256 (buckets de 0.25 MB) en la CPU: los
    all-reduce de cada paso se solapan con el backward solo parte de su tiempo, y el hilo principal
    espera el resto (tests/fixtures/gloo/balanced_2). Con un rango lento (straggler_2), la comunicación
    expuesta del rango que espera es casi todo su paso.

    Impacto:
    Por paso: el trabajo de comunicación durante el que no corre ningún cómputo (en la GPU, ningún otro
    kernel ni copia; en los hilos de gloo, ningún op de los hilos de cómputo), sumado sobre los pasos y
    dividido por su número; fracción del paso mediano. Es una cota superior: el all-reduce del último
    bucket siempre cierra el backward solo. Sobre una carpeta (`pista analyze DIR`), la parte que es este
    rango esperando a un rango tardío es el impacto de straggler, no de esta regla: se descuenta aquí, y
    el hallazgo solo queda si lo que resta sigue pasando los umbrales. Antes, la regla daba la fracción
    mediana y un aviso fijo. balanced_2: 2.6 ms de un paso de 6.7 ms en el rango 0 (38%), 5.6 de 9.8 ms
    en el rango 1 (57%); el rango 0 de straggler_2 solo, 36.4 de 39.4 ms (92%), de los que 31.9 ms son
    su espera al rango 1 (en la carpeta: 4.6 ms, 12%, aviso).

    El consejo sigue a la colectiva que más expone, leída de la traza: el argumento 'Collective name'
    del propio trabajo, si no la llamada del host que lo lanzó (`nccl:all_to_all`, `c10d::alltoall_base_`,
    el 'Collective name' de `record_param_comms`), si no el nombre del kernel (AllReduce, AllGather,
    ReduceScatter, Broadcast; SendRecv solo no dice nada: NCCL 2.1x ejecuta todas las colectivas de
    hta_negq_rank0 como `ncclKernel_SendRecv`). Antes, toda exposición recibía el consejo del all-reduce de
    DDP, también el all-to-all de embeddings de TorchRec (hta_diff_control: 42 `nccl:all_to_all`;
    hta_negq_rank0, hta_sampled_rank0: `c10d::alltoall_base_`).

    Solución:
    Dale a la comunicación cómputo tras el que ocultarse. Un all-reduce (los gradientes de DDP): ajusta
    `bucket_cap_mb` de DDP para que los buckets empiecen antes, mantén `gradient_as_bucket_view=True`,
    acumula gradientes en varios micro-lotes con `no_sync()`, fragmenta con FSDP/ZeRO con prefetch, o
    comprime gradientes (comm hooks de DDP). Un all-to-all (la distribución de entradas y embeddings de
    TorchRec, los tokens de una mezcla de expertos): solápalo con el cómputo del lote anterior
    (`TrainPipelineSparseDist` de TorchRec corre la distribución de entradas del lote siguiente durante el
    forward y el backward de este) y revisa el desequilibrio entre rangos (uno con más ids o tokens hace
    esperar a todos). All-gather y reduce-scatter (los parámetros y gradientes de FSDP): precarga
    (`forward_prefetch=True`, `backward_prefetch=BackwardPrefetch.BACKWARD_PRE`; en FSDP2
    `set_modules_to_forward_prefetch`) y agrupa en menos unidades más grandes. Si un rango llega tarde
    (ver `straggler`), arregla primero ese rango: la espera es su retraso.

    De quién es un all-gather o un reduce-scatter también se lee de la traza (revisión 4): las marcas propias
    de FSDP (regiones `FSDP::`, `FullyShardedDataParallel`) significan parámetros y gradientes de FSDP; una
    colectiva lanzada bajo el `Redistribute` de DTensor (o una colectiva funcional, `_c10d_functional::`, en
    una ventana sin backward) sin ninguna marca de FSDP es el paralelismo de tensor o de secuencia moviendo
    activaciones, con otro consejo: enviarlas en bf16 (la mitad de bytes), limitarse al mínimo de colectivas
    (el paralelismo de secuencia necesita un all-gather y un reduce-scatter por bloque de atención y por
    bloque MLP), solaparlas (paralelismo de tensor asíncrono) o no fragmentar un modelo que cabe en una GPU (rtx4090_tp2_llama_dim1024 de
    tokenomics: el forward de un LLaMA de 4 capas en 2 RTX 4090, 39 llamadas a Redistribute, reduce-scatters
    en fp32 de activaciones [4096, 8, 1024], 313 ms de 370 ms de tiempo de GPU; antes, el consejo de
    prefetch de FSDP). Dos llamadas no son lo que parecen y se distinguen: la primera llamada de una
    colectiva en la ventana, mucho más lenta que las siguientes, es su preparación única (NCCL conectando
    con sus pares), que queda fuera del impacto (el primer reduce-scatter de dim1024, 59.7 ms frente a una
    mediana de 13.7 ms); una llamada mucho más larga que las demás de su colectiva espera a que llegue otro
    rango (rtx4090_tp2_llama_annot: un all-gather de 442 ms frente a una mediana de 3.6 ms, 441 de sus 551 ms
    expuestos), algo que la traza de este rango no puede explicar: compara los rangos.

kind-item = { $kind } { $us }
mib-item = { $mib } MiB por llamada
moved = { $has_moved ->
    [yes] {" "}({ $moved })
   *[no] {""}
  }
late = { $has_late ->
    [yes] {" "}{ $late_wait_us } de ello es este rango esperando al rango { $late_rank }, que llega tarde (ver
        straggler); { $own_exposed_us } son suyos.
   *[no] {""}
  }
role = { $tp ->
    [yes] {" "}Mueven activaciones del paralelismo de tensor o de secuencia{ moved }: DTensor redistribuye
        { $redistributes } vez/veces por paso{ $forward_only ->
            [yes] , en un forward sin backward
           *[no] {""}
        }, y la traza no tiene ninguna marca de FSDP.
   *[no] {""}
  }
# "llamada de all-reduces" for several: the Python text's plural, kept as it was
wait-what = { $wait_has_kind ->
    [yes] llamada de { $wait_kind }
   *[no] llamada
  }
wait = { $has_wait ->
    [yes] {" "}{ $wait_many ->
            [yes] { $wait_calls } { wait-what }s tardan hasta
           *[no] Una { wait-what } tarda
        } { $wait_dur_us } frente a una mediana de { $wait_median_us } de las { $wait_siblings } llamadas de la
        colectiva: { $wait_exposed_us } por paso de espera a que llegue otro rango, no de transferencia; la traza de
        este rango no puede decir por qué el otro llegó tarde.
   *[no] {""}
  }
setup = { $has_setup ->
    [yes] {" "}Se deja fuera: { $setup_us } en las primeras llamadas de sus colectivas en la ventana, hasta
        { $setup_ratio }x la mediana de sus llamadas siguientes: preparación única (NCCL conectando con sus pares, la
        primera pasada de cada rango).
   *[no] {""}
  }
message = { $exposed_us } de comunicación por paso corren sin cómputo al lado: el { $share } de un paso de
    { $step_us }. De { $comm_us } de colectivas por paso { $domain ->
        [gpu] en la GPU
       *[host] en los hilos de gloo
    } ({ $collectives } eventos en { $steps } paso(s)), el { $overlap } se solapa con cómputo; { $collective } es la
    que más expone.{ $many_kinds ->
        [yes] {" "}Por colectiva, por paso: { $kinds }.
       *[no] {""}
    }{ late }{ role }{ wait }{ setup }
own-advice = { $own_case ->
    [all_to_all] este all-to-all ({ $collective }) es la distribución de entradas y embeddings de TorchRec o el
        intercambio de tokens de una mezcla de expertos, no un all-reduce de gradientes, así que los ajustes de buckets
        de DDP no lo tocan: solápalo con cómputo encadenando la distribución de entradas, para que el all-to-all del
        lote siguiente corra durante el forward y el backward de este (TrainPipelineSparseDist de TorchRec), y compara
        los rangos: uno con más ids o tokens que enviar hace esperar a todos los demás
    [fsdp] este { $kind_name } ({ $collective }) mueve los parámetros y gradientes de FSDP o ZeRO: precarga los
        parámetros de la unidad siguiente mientras esta calcula (forward_prefetch=True y
        backward_prefetch=BackwardPrefetch.BACKWARD_PRE en FSDP; set_modules_to_forward_prefetch y
        set_modules_to_backward_prefetch en FSDP2), y agrupa en menos unidades más grandes para que cada colectiva
        mueva más
    [broadcast] este broadcast ({ $collective }): si son los buffers de DDP (las estadísticas de batch norm) enviados
        en cada forward, pon broadcast_buffers=False donde los rangos ya los mantienen iguales (o usa SyncBatchNorm); si
        no, lánzalo con async_op=True y espéralo solo donde se necesita su resultado
    [tp] estas colectivas ({ $collective }) son activaciones del paralelismo de tensor o de secuencia{ moved }, no
        parámetros de FSDP, y cada capa las espera: { $bf16 ->
            [yes] envíalas en bf16 (ejecuta el modelo en bf16, o convierte las activaciones que redistribuyen los
                estilos de paralelismo: la mitad de bytes),{" "}
           *[no] {""}
        }limítate al mínimo de colectivas (el paralelismo de secuencia necesita un all-gather y un reduce-scatter por
        bloque de atención y por bloque MLP; las demás vienen de disposiciones de entrada o salida que replican en
        medio), solápalas con cómputo (paralelismo de tensor asíncrono: torch.compile con
        torch._inductor.config._micro_pipeline_tp = True) o, si el modelo cabe en una GPU, no lo fragmentes: ejecuta
        una copia entera en cada GPU
    [shard] si este { $kind_name } ({ $collective }) mueve los parámetros y gradientes de FSDP o ZeRO (la traza no
        tiene ninguna marca de FSDP que lo diga), precarga los parámetros de la unidad siguiente mientras esta calcula
        (forward_prefetch=True y backward_prefetch=BackwardPrefetch.BACKWARD_PRE en FSDP;
        set_modules_to_forward_prefetch y set_modules_to_backward_prefetch en FSDP2) y agrupa en menos unidades más
        grandes; si mueve activaciones del paralelismo de tensor, envíalas en bf16 y solápalas (paralelismo de tensor
        asíncrono)
    [gpu] deja que { $collective } se solape con el backward: ajusta bucket_cap_mb de DDP para que los primeros
        buckets empiecen mientras el backward sigue, mantén gradient_as_bucket_view=True, acumula gradientes con
        no_sync() para hacer el all-reduce una vez cada N micro-lotes, o fragmenta con FSDP con prefetch
   *[host] { $collective } corre en los hilos de CPU de gloo junto al cómputo tras el que debería ocultarse
        ({ $overlap } solapado): acumula gradientes con no_sync() para hacer el all-reduce una vez cada N pasos, usa
        buckets más grandes (bucket_cap_mb) para enviar menos mensajes y más grandes, o entrena en GPUs con NCCL
  }
advice = { $advice_case ->
    [late] El rango { $late_rank } llega tarde y este rango le espera { $late_wait_us } por paso: arregla primero ese
        rango (ver straggler). Para los otros { $own_exposed_us }, { own-advice }.
    [wait] Compara primero los rangos: { $wait_exposed_us } por paso son una llamada esperando a otro rango, que ni
        solapar ni mensajes más pequeños acortan; ejecuta pista analyze sobre la carpeta con la traza de cada rango, o
        mira qué hacen los otros rangos en ese momento, y haz que el tardío llegue a tiempo. Para el resto,
        { own-advice }.
   *[own] { $own_cap }.
  }
fix-own = { $fix_case ->
    [tp] activaciones del paralelismo de tensor: envíalas en bf16, limítate al mínimo de colectivas, solápalas (TP
        asíncrono) o no fragmentes un modelo que cabe en una GPU
    [shard] si es de FSDP, precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de
        FSDP); si son activaciones del paralelismo de tensor, envíalas en bf16 y solápalas (TP asíncrono)
    [all_to_all] encadena la distribución de entradas (TrainPipelineSparseDist de TorchRec) y revisa el equilibrio
        entre rangos
    [all_gather] precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de FSDP)
    [reduce_scatter] precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de FSDP)
    [broadcast] broadcast_buffers=False si son los buffers de DDP; si no, async_op=True
   *[all_reduce] acumula gradientes con no_sync() para hacer el all-reduce una vez cada N pasos y ajusta
        bucket_cap_mb de DDP para que los buckets empiecen durante el backward
  }
fix = { $has_late ->
    [yes] { $collective } expone { $own_exposed_us } por paso propios además de esperar al rango { $late_rank }:
        arregla primero el rango { $late_rank } y luego { $fix_case ->
            [all_reduce] acumula gradientes con no_sync() para hacer el all-reduce una vez cada N pasos
           *[other] { fix-own }
        }
   *[no] { $collective }{ $fix_kind ->
            [yes] {" "}({ $kind_name })
           *[no] {""}
        } corre { $exposed_us } de cada paso de { $step_us } sin cómputo al lado: { $waits_most ->
            [yes] { $wait_exposed_us } de ello son una llamada esperando a otro rango (compara primero los rangos);
                para el resto,{" "}
           *[no] {""}
        }{ fix-own }
  }
basis = comunicación sin cómputo al lado, sumada por paso { $tp ->
        [yes] (cada capa espera sus activaciones: solo solaparlas, el paralelismo de tensor asíncrono, la oculta)
       *[no] (cota superior: { $last_bucket ->
            [yes] el all-reduce del último bucket
           *[no] el último { $kind_name }
        } no puede ocultarse)
    }{ $has_setup ->
        [yes] , menos { $setup_us } de preparación única en primeras llamadas
       *[no] {""}
    }{ $has_late ->
        [yes] , menos la espera al rango { $late_rank }, que cuenta en straggler
       *[no] {""}
    }
exposed-call = { $exposed_us } de sus { $dur_us } sin cómputo al lado
waiting-call = { $ratio }x la mediana de { $median_us } de su colectiva: espera a otro rango
setup-call = la primera llamada de la colectiva, { $ratio }x la mediana de { $median_us } de las siguientes:
    preparación única
