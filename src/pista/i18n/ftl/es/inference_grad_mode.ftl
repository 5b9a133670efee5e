## inference-grad-mode: en español
title = La inferencia corre en modo grad: cada operación construye un nodo de autograd
severity-exception = info sin marcas ProfilerStep: el forward de un entrenamiento perfilado solo, con su backward fuera de la ventana, se ve igual

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Inferencia con el modo grad activo: pasos que no ejecutan backward (ningún nodo del motor de
    autograd, ningún paso del optimizador) mientras sus operaciones registran nodos de autograd, porque
    el bucle no está bajo `torch.inference_mode()` ni `torch.no_grad()`. Torch registra el `Sequence
    number` de cada operación solo en modo grad, y el número avanza uno por cada nodo que construye el
    forward, así que los números distintos de un paso cuentan sus nodos.

    Por qué:
    Cada nodo es trabajo del host dentro de la operación (la función de backward, sus aristas, los
    tensores que guarda), y el forward conserva cada activación que guarda para un backward que nunca
    corre, hasta que su salida se libera: más tiempo por llamada donde el host es el límite
    (decodificación, lotes pequeños) y más memoria con cualquier tamaño. `model.eval()` no lo desactiva;
    `generate()` de transformers sí, un bucle escrito a mano no.

    Ejemplo:
    gpu/gpt2_flash_grad (GPT-2 124M, decodificación con lote 1, H200): 444 nodos por token; la caché KV
    arrastra la historia de autograd de cada token anterior, así que la memoria crece token a token
    (allocator-churn). Sin profiler,
    en un mismo proceso (gpu/grad_time.py), torch.inference_mode() llevó el token de 6.21 a 4.94 ms, y la
    inferencia de ResNet-50 bf16 de 5.20 a 4.22 ms (lote 32) y de 7.67 a 6.29 ms (lote 8), su memoria
    máxima de 1434 a 267 MiB y de 426 a 130 MiB.

    Impacto:
    Por paso, los nodos por GRAD_NODE_US (la mediana del ahorro por nodo de los gemelos: GPT-2 2.75 µs,
    ResNet-50 5.6 y 8.2; CPU_GRAD_NODE_US, 2.0, sin GPU: los gemelos de un MLP en CPU) por la inflación
    del tiempo de host del profiler (PROFILER_HOST_INFLATION, 2, como la toma overhead-bound), como
    mucho la inactividad de la GPU por operación del paso (lo que retiene el despacho del host) donde
    hubo GPU. gpu/gpt2_flash_grad 5.0 ms de un token de 18.6 ms; gpu/resnet50_grad 2.0 ms de un paso de
    22.4 ms (los gemelos perfilados difieren unos 9 ms, parte por la máquina de cada proceso; sin
    profiler cada uno ahorró un 19-20%); gpu/cpu_infer_grad 196 µs de un paso de 0.96 ms (sin profiler
    91-117 µs de 715). La memoria no entra en el impacto (una traza sin eventos de memoria no la
    muestra). overhead-bound, launch-bound y many-calls le dejan esta inactividad (`claimed_idle`). Por
    debajo del 1% del paso la regla calla, y donde ninguna operación construye un nodo (un bucle sobre
    tensores que no necesitan grad) no se activa. Sin marcas ProfilerStep es info, con esa condición
    dicha: el forward de un entrenamiento perfilado solo, con su backward fuera de la ventana, se ve
    igual.

    Solución:
    Ejecuta el bucle con `with torch.inference_mode():` (o `torch.no_grad()` si sus tensores deben
    encontrarse luego con autograd), alrededor de las llamadas al modelo, además de `model.eval()`.

top-item = { $name } { $per_step }
message = { $lead ->
    [window] La traza no tiene ProfilerStep ni backward (si el programa entrena y su backward corrió fuera de la
        ventana perfilada, esto no aplica)
    [all] Ningún paso ejecuta backward
   *[some] { $steps } de los { $of_steps } pasos no ejecutan backward
  }, y aun así sus operaciones registran nodos de autograd: { $nodes } por paso ({ $top }), así que el bucle corre
    fuera de torch.inference_mode() y torch.no_grad(). Cada nodo es trabajo del host dentro de su operación, unos
    { $cost_us } por paso tal como se perfiló{ $capped ->
        [yes] , como mucho la inactividad de la GPU mientras el host despacha en esos pasos ({ $idle_us })
       *[no] {""}
    }; y el forward guarda cada activación que salva para un backward que nunca corre{ $cache ->
        [yes] {" "}(la memoria crece: { $malloc_steps } de { $steps } pasos llaman a cudaMalloc, y la entrada de
            { $growing_op } crece paso a paso: una caché que se conserva entre pasos arrastra el grafo de autograd de
            cada paso anterior)
       *[no] {""}
    }. En la H200, sin profiler, inference_mode llevó la decodificación de GPT-2 de 6.21 a 4.94 ms por token y
    ResNet-50 con lote 32 de 5.20 a 4.22 ms por paso (19-20%), y la memoria máxima de ResNet-50 de 1434 a 267 MiB (la
    de GPT-2 de 375 a 359).{ $gpu ->
        [yes] {""}
       *[no] {" "}En una CPU, un MLP de 16 bloques tardó 715 µs por paso en modo grad frente a 613-623 µs.
    }
advice = Ejecuta el bucle dentro de un bloque torch.inference_mode() alrededor de las llamadas al modelo
    (torch.no_grad() si sus tensores deben encontrarse luego con autograd), además de model.eval(); generate() de
    transformers ya lo hace, un bucle de decodificación escrito a mano no.
fix = la inferencia corre en modo grad ({ $nodes } nodos de autograd por paso): envuélvela en torch.inference_mode().
basis = los nodos de autograd por paso por { $node_us } µs cada uno (sin profiler, { $gpu ->
        [yes] la mediana de los gemelos en la H200: 2.75-8.2 µs
       *[no] los gemelos de un MLP en CPU, sin GPU
    }) por { $inflation } por la inflación del tiempo de host del profiler{ $capped ->
        [yes] , como mucho la inactividad de la GPU mientras el host despacha en esos pasos
       *[no] {""}
    }; la memoria no cuenta
node-op = construye un nodo de autograd (Sequence number { $seq })
