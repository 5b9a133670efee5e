## memory-growth: en español
title = La memoria crece paso a paso
severity-exception = una fuga cuesta memoria, no tiempo: se gradúa por lo pronto que el dispositivo se queda sin ella

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Memoria que crece paso a paso: en una traza con `profile_memory=True`, los bytes asignados en un
    dispositivo al final de cada paso perfilado suben en todos los pasos. La causa habitual es un tensor
    guardado entre pasos con su grafo de autograd (`losses.append(loss)` en vez de `loss.item()` o
    `loss.detach()`), o una caché que solo crece. La regla nombra los ops que asignaron la memoria que
    sigue retenida al final de la ventana.

    Por qué:
    Cada paso mantiene vivas sus activaciones: la memoria sube hasta que el asignador se queda sin ella
    (CUDA out of memory) horas después; antes, un asignador más lleno se fragmenta y llama más a cudaMalloc.

    Ejemplo:
    gpu/memory_leak en una H200: un paso de una MLP 2048-8192-2048 que añade su pérdida (con el grafo) a
    una lista: la memoria asignada al final de los pasos es 663.8, 739.3 y 814.8 MB, +75.5 MB por paso;
    los 150.1 GB de la H200 duran unos 1.980 pasos más. gpu/memory_steady (el mismo bucle guardando
    `loss.detach()`) crece 512 bytes por paso y no dice nada.

    Impacto:
    No es tiempo: una fuga no cuesta nada por paso hasta que la ejecución falla. Es la excepción
    documentada a la gravedad según el impacto: aviso siempre que se activa, crítico cuando el
    dispositivo se quedaría sin memoria en menos de CRITICAL_STEPS_TO_OOM pasos a este ritmo. Su
    impacto es 0 µs.

    Solución:
    Guarda los escalares como números de Python (`loss.item()`, cada N pasos) o separa lo que guardes
    (`loss.detach()`); vacía las cachés y listas que sobreviven al paso; compruébalo con
    `torch.cuda.memory_allocated()` al final de cada paso.

message = La memoria asignada en { $device } al final de cada uno de { $steps } pasos sube de { $first } a
    { $last }, { $growth } más en cada paso{ $has_oom ->
        [yes] ; los { $capacity } del dispositivo duran unos { $to_oom } pasos más a este ritmo
       *[no] {""}
    }.{ $has_op ->
        [yes] {" "}Casi todo lo que retiene el último paso lo asignó { $top_op }.
       *[no] {""}
    }
advice = Algo mantiene vivos los tensores de cada paso: guarda los escalares como números (loss.item() cada N
    pasos) o separa lo que guardes (loss.detach()), y vacía listas y cachés que sobreviven al paso{ $has_op ->
        [yes] ; empieza por lo que retiene las salidas de { $top_op }.
       *[no] .
    }
fix = La memoria de { $device } crece { $growth } por paso{ $has_op ->
        [yes] {" "}(retenida desde { $top_op })
       *[no] {""}
    }: no guardes tensores con su grafo entre pasos (loss.detach() o loss.item()).
basis = memoria, no tiempo: bytes asignados al final de cada paso, creciendo en todos (no ahorra tiempo por
    paso)
held = { $mb } MB asignados aquí en el último paso, aún retenidos al final
