## inference-train-mode: en español
title = La inferencia corre con el modelo en train(): dropout y batch norm actúan como al entrenar
severity-exception = al menos un aviso: dropout y batch norm en modo entrenamiento hacen incorrectas las salidas de la inferencia; info sin marcas ProfilerStep, donde el forward de un entrenamiento perfilado solo se ve igual

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Inferencia con el modelo en modo entrenamiento (`model.train()`, el modo por defecto al construirlo, o
    tras un bucle de entrenamiento sin `model.eval()`): en pasos que no ejecutan backward, dropout sigue
    descartando (`aten::dropout` llama a `aten::native_dropout`, sus kernels corren) y batch norm
    normaliza con las estadísticas del propio lote y actualiza las acumuladas (`aten::batch_norm` con
    training=True, sus kernels de estadísticas corren).

    Por qué:
    Las salidas son incorrectas, no solo más lentas: dropout las vuelve aleatorias, y batch norm hace que
    la salida de cada muestra dependa del resto de su lote mientras sobrescribe la media y la varianza
    acumuladas que aprendió el modelo. `torch.inference_mode()` y `torch.no_grad()` no lo cambian; solo
    `model.eval()`. Los kernels propios del entrenamiento cuestan además tiempo de GPU.

    Ejemplo:
    gpu/resnet50_train (ResNet-50 bf16, lote 32, bajo torch.inference_mode(), H200): 53 batch norms por
    paso en modo entrenamiento, sus kernels de estadísticas 1.8 ms de GPU por paso (el gemelo en eval
    gpu/resnet50_nograd no ejecuta ninguno); sin profiler (gpu/train_time.py) eval() llevó el paso de 6.22
    a 4.84 ms. gpu/gpt2_decode_train (decodificación de GPT-2): 25 dropouts y 12 dropouts de atención por
    token; eval() llevó el token de 7.24 a 6.57 ms con SDPA fijado a flash, pero sin fijarlo dropout_p=0
    deja que SDPA elija la atención de cuDNN, un grafo por longitud de KV (gpu/gpt2_decode_nograd,
    cudnn-setup).

    Impacto:
    El tiempo de GPU de los kernels que solo corren en modo entrenamiento (los de los dropouts activos,
    las estadísticas de batch norm y la actualización de las acumuladas), por la fracción ocupada de la
    GPU, más la inactividad de la GPU por operación bajo los dropouts que descartan (su despacho, donde
    el host es el límite; overhead-bound, launch-bound y many-calls se la dejan a esta regla,
    `claimed_idle`): una cota inferior (el kernel de entrenamiento de batch norm de cuDNN hace ambas
    cosas en uno, y no cuenta). gpu/resnet50_train 1.2 ms, gpu/gpt2_decode_train 1.5 ms por paso (medido
    sin profiler: 1.34 y 0.66 ms). En una traza solo de CPU: el tiempo de host de los dropouts, y el 60% del de los
    batch norms en modo entrenamiento (las estadísticas acumuladas de eval evitan la pasada de estadísticas: un 63-94%
    menos, medido en una CPU). Las salidas incorrectas son la razón de que sea al menos un aviso,
    cueste lo que cueste, y vaya primero (SEVERITY_EXCEPTION); sin marcas ProfilerStep es info con esa
    condición dicha (el forward de un entrenamiento perfilado solo, con su backward fuera de la ventana,
    se ve igual).

    Solución:
    Llama a `model.eval()` antes del bucle de inferencia (y a `model.train()` de nuevo antes de volver a
    entrenar).

and = {" "}y{" "}
dropouts-item = { $n } dropouts por paso siguen descartando (sus salidas son aleatorias)
attention-item = { $n } llamadas a scaled_dot_product_attention por paso descartan pesos de atención
    (dropout_p={ $p })
batch-norms-item = { $n } batch norms por paso normalizan con las estadísticas del propio lote y sobrescriben su media
    y varianza acumuladas
idle-dropouts-item = los dropouts
idle-counters-item = { $n } actualizaciones de num_batches_tracked
dropout-module-item = dropout
batch-norm-module-item = estadísticas de batch norm
message = { $lead ->
    [window] La traza no tiene ProfilerStep ni backward (si el programa entrena y su backward corrió fuera de la
        ventana perfilada, esto no aplica)
    [all] Ningún paso ejecuta backward
   *[some] { $steps } de los { $of_steps } pasos no ejecutan backward
  }, y aun así el modelo está en modo entrenamiento: { $what }. { $has_steps ->
    [yes] Las salidas son incorrectas, no solo más lentas.
   *[no] Si esta ventana es inferencia, sus salidas son incorrectas, no solo más lentas; nada en ella dice cuál.
  } { $cpu ->
    [yes] En la CPU, eval() ahorra { $cpu_us } por paso de su tiempo (las estadísticas acumuladas evitan la pasada de
        estadísticas de batch norm, cerca del { $bn_saving }% de su tiempo; un dropout en eval no hace nada)
   *[no] Los kernels propios del entrenamiento ocupan { $kernel_us } de GPU por paso{ $idle ->
        [yes] , y la GPU está inactiva { $idle_us } por paso mientras se despachan { $dispatched }
       *[no] {""}
      }
  }.
advice = Llama a model.eval() antes del bucle de inferencia (y a model.train() antes de volver a entrenar);
    torch.inference_mode() y torch.no_grad() no desactivan dropout ni batch norm.{ $sdpa ->
        [yes] {" "}Cuando eval() pone dropout_p a 0, scaled_dot_product_attention puede elegir la atención de cuDNN,
            que construye un grafo por cada longitud de secuencia nueva (cudnn-setup): fíjala a flash/efficient con
            torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]).
       *[no] {""}
    }
fix = el modelo hace inferencia en modo train() ({ $modules }): llama antes a model.eval(){ $grad ->
        [yes] {" "}y ejecútala dentro de torch.inference_mode() (inference-grad-mode)
       *[no] {""}
    }{ $sdpa ->
        [yes] , y fija SDPA a flash/efficient (sdpa_kernel): con dropout_p=0 puede elegir la atención de cuDNN
       *[no] {""}
    }.
basis = { $cpu ->
    [yes] el tiempo de CPU de los dropouts que descartan, y el { $bn_saving }% del de los batch norms en modo
        entrenamiento (medido en una CPU: el batch norm de eval tarda un 63-94% menos){ $has_steps ->
            [yes] ; al menos un aviso, y primero, porque las salidas son incorrectas
           *[no] ; solo información: sin pasos, la ventana puede ser un forward de entrenamiento
        }
   *[no] { basis-gpu }
  }
basis-gpu = { $gpu_time ->
    [no] el trabajo propio del entrenamiento no ocupa tiempo de GPU aquí: el hallazgo es por las salidas, que el modo
        entrenamiento hace incorrectas{ $has_steps ->
            [yes] {""}
           *[no] {" "}si esta ventana es inferencia
        }
   *[yes] el tiempo de GPU de los kernels que solo corren en modo entrenamiento (los de dropout, las estadísticas de
        batch norm), por el { $busy }% de la ventana en que la GPU está ocupada, más la inactividad de la GPU
        mientras se despachan los dropouts y las actualizaciones de num_batches_tracked de batch norm{ $has_steps ->
            [yes] ; al menos un aviso, y primero, porque las salidas son incorrectas
           *[no] ; solo información: sin pasos, la ventana puede ser un forward de entrenamiento
        }
  }
training-op = { $kind ->
    [dropout] dropout que descarta (modo train)
    [attention] atención con dropout_p > 0 (modo train)
   *[other] batch norm en modo entrenamiento
  }
