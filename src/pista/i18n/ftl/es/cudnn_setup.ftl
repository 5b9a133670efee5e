## cudnn-setup: en español
title = cuDNN prepara cada forma nueva en el host mientras la GPU espera

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Llamadas de cuDNN (convoluciones y su backward, el backend cuDNN de scaled_dot_product_attention, las
    RNN de cuDNN) que retienen el host mucho más que un lanzamiento, paso tras paso, con la GPU ociosa:
    cuDNN prepara en el host cada forma de problema nueva. Sin `cudnn.benchmark` construye un plan de
    ejecución (para la atención, un grafo entero, compilado para esa longitud de secuencia); con él,
    cronometra cada algoritmo en la GPU, sincronizando entre ellos. Las formas de entrada registradas
    dicen qué llamadas tenían una forma no vista antes en la traza.

    Por qué:
    La preparación se guarda por forma, así que las formas fijas la pagan una vez; las formas que cambian
    en cada paso la pagan en cada paso. Una caché KV que crece un token por paso de decodificación da a la
    atención una longitud nueva en cada paso; el entrenamiento multiescala o un último lote más pequeño da
    tamaños nuevos a las convoluciones.

    Ejemplo:
    `gpu/kv_decode` (GPT-2 124M, fp16, lote 1, decodificación voraz con caché KV, H200, torch 2.11): la
    primera aten::_cudnn_attention_forward de cada token pasa ~70 ms en el host construyendo un grafo de
    cuDNN para la longitud nueva, el 76% del paso de 93 ms. Sin profiler: 70.3 ms por token, 8.2 ms con
    SDPA fijado a los kernels flash/efficient, 7.7 ms con longitudes ya vistas.
    `gpu/multiscale_benchmark` (ResNet-18, bf16, un tamaño de entrada nuevo en cada paso,
    `cudnn.benchmark=True`): pasos de 2.4-3.5 s cronometrando algoritmos; `gpu/multiscale_plain` (lo mismo
    sin benchmark): ~1.5 ms de construcción de plan en cada convolución, pasos de 84-105 ms.

    Impacto:
    La GPU ociosa dentro de esas llamadas, menos la ociosidad de las otras llamadas de esas ops (si las
    hay; si no, una cota superior), por paso. Las llamadas dentro de un paso frío, una ventana muerta, la
    compilación o GEMMs con formas nuevas pertenecen a esos hallazgos; una sola llamada es una primera
    llamada (de lazy-loading).

    En una ventana sin pasos, la preparación cuyas formas (el op, si no se registran formas) vuelven
    todas a ejecutarse sin preparación tras la última llamada que prepara es una primera pasada, un
    forward en frío: de una sola vez, y la solución es calentar, no agrupar tamaños (issue 35:
    foreign/hta_alexnet, 1075.6 ms una sola vez, antes "por paso" con "agrupa los tamaños"; gpu/kv_decode
    sin pasos sigue siendo recurrente: la longitud de cada token no vuelve a verse).

    Solución:
    Atención: fija SDPA a los kernels flash o memory-efficient
    (`torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])`) o fija
    la longitud (una caché KV estática, relleno a unas pocas longitudes). Convoluciones: limita los tamaños
    de entrada a unos pocos grupos, calentados antes de perfilar; con `cudnn.benchmark` activado y tamaños
    que no paran de cambiar, desactívalo.

steps = { $steps_hit ->
    [none] la ventana
    [one] el paso { $step_list }
   *[many] los pasos { $step_list }
  }
per = { $per_step ->
    [yes] por paso
   *[no] en la ventana
  }
what = { $kind ->
    [attention] La atención de cuDNN construye y compila un grafo para cada longitud de secuencia nueva (una caché
        KV que crece un token por paso le da una nueva en cada paso)
    [conv] CuDNN construye un plan de ejecución para cada forma de convolución nueva
   *[rnn] CuDNN prepara su RNN para cada forma nueva
  }
message = { $calls } llamadas de { $ops } en { steps } dejan la GPU ociosa { $per_call_us } cada una
    (mediana){ $has_typical ->
        [yes] , frente a { $typical_us } en sus otras llamadas
       *[no] {""}
    }: { $once ->
        [yes] { $idle_us } una sola vez: la primera pasada de la ventana, cada forma vuelve a ejecutarse después
            sin preparación
       *[no] { $step_idle_us } { per }
    }.{ $has_new ->
        [yes] {" "}{ $new_shapes } de ellas tenían una forma de entrada no vista antes en la traza.
       *[no] {""}
    }{ $benchmark ->
        [yes] {" "}Lanzan { $launches } kernels cada una y sincronizan { $syncs } veces: cudnn.benchmark está
            cronometrando cada algoritmo para cada forma nueva.
       *[no] {" "}{ what }.
    }
advice = { $once ->
    [yes] Las formas se repiten: cuDNN preparó cada una una sola vez, en la primera pasada (un forward en frío),
        no en régimen estable. Ejecuta una iteración antes de perfilar, o perfila con
        torch.profiler.schedule(wait=1, warmup=1, active=N){ $benchmark ->
            [yes] ; la búsqueda de cudnn.benchmark compensa con formas que se repiten, mantenla.
           *[no] .
        }
   *[no] { $benchmark ->
        [yes] Pon torch.backends.cudnn.benchmark = False mientras las formas de entrada sigan cambiando (solo
            compensa con formas que se repiten), o fíjalas: agrupa los tamaños en unos pocos y calienta cada
            uno antes de perfilar.
       *[no] { $kind ->
            [attention] Fija scaled_dot_product_attention a los kernels flash o memory-efficient, que no necesitan
                un grafo por forma: envuelve la llamada al modelo en
                torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]); o
                fija la longitud (una caché KV estática, cache_implementation='static' de transformers, o relleno
                a unas pocas longitudes).
           *[other] Limita las formas de entrada a unos pocos tamaños (agrúpalas o rellénalas) y calienta cada una
                antes de perfilar: cada forma nueva cuesta un plan de cuDNN nuevo, en el host, con la GPU ociosa.
        }
    }
  }
fix = { $once ->
    [yes] { $op } prepara cada forma una sola vez en la primera pasada de la ventana ({ $idle_us } una sola
        vez); las formas se repiten después: ejecuta una iteración antes de perfilar.
   *[no] { $benchmark ->
        [yes] { $op } ejecuta la búsqueda de algoritmos de cudnn.benchmark para cada forma nueva, { $step_idle_us }
            { per }: pon torch.backends.cudnn.benchmark = False o fija las formas.
       *[no] { $kind ->
            [attention] { $op } construye un grafo de cuDNN para cada longitud de secuencia nueva, { $step_idle_us }
                { per }: fija SDPA a flash/efficient (torch.nn.attention.sdpa_kernel) o usa una caché KV estática.
           *[other] { $op } construye un plan de cuDNN para cada forma nueva, { $step_idle_us } { per }: agrupa los
                tamaños en unos pocos.
        }
    }
  }
basis = la GPU ociosa dentro de las llamadas de cuDNN que preparan una forma ({ $idle_us }){ $has_typical ->
        [yes] , menos la ociosidad de esas ops en sus otras llamadas
       *[no] , una cota superior (ninguna otra llamada de esas ops con la que comparar)
    }, { $once ->
        [yes] una sola vez, una primera pasada
       *[no] { $per_step ->
            [yes] por paso
           *[no] en la ventana
        }
    }
call-note = { $idle_us } de GPU ociosa en esta llamada, { $launches } kernel(s) lanzados{ $has_dims ->
    [yes] ; entrada { $dims }
   *[no] {""}
  }
