## gemm-alignment: en español
title = GEMMs con dimensiones que no son múltiplo de 8 usan kernels lentos de reserva

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    GEMMs de tensor cores (bf16, fp16, fp8, tf32) con una dimensión que no es múltiplo de 16 bytes de su
    tipo (8 elementos bf16/fp16, 16 fp8, 4 tf32) que van muy por debajo de los otros GEMMs de la traza con
    ese tipo: cuBLAS no puede usar sus kernels alineados para esa matriz y recurre a otros más lentos (en
    Hopper, kernels `cutlass_75_..._align1` de la época Turing). Los FLOPs salen de las formas registradas
    de las ops que los lanzan (record_shapes).

    Por qué:
    Un vocabulario de 50257 (el de GPT-2) o cualquier tamaño oculto impar desalinea todos los GEMMs que lo
    tocan, hacia delante y hacia atrás: la cabeza del modelo de lenguaje, a menudo el mayor GEMM del modelo,
    va entonces a una fracción del ritmo de la tarjeta. Rellenar la dimensión hasta un múltiplo de 64
    cuesta unas pocas filas sin usar.

    Ejemplo:
    `gpu/gpt2_conv1d` (GPT-2 de transformers, 6 bloques, d=768, vocabulario 50257, autocast bf16, lote
    8 x 512, H200): los tres GEMMs de la cabeza (4096x768 por 768x50257 hacia delante, y los dos de atrás)
    usan kernels `cutlass_75_tensorop_bf16_s1688gemm` a 94-145 TFLOP/s cuando los GEMMs alineados del
    modelo llegan a 400-720: 7.9 ms por paso, el 36% del tiempo de GPU. Sin profiler, con AdamW fusionado:
    22.08 ms por paso con vocabulario 50257, 20.61 ms con 50304.

    Impacto:
    Por paso, el tiempo de kernel de las llamadas desalineadas menos sus FLOPs al ritmo ponderado por tiempo
    de los GEMMs alineados de la traza con el mismo tipo (el tiempo de GPU que devolvería el relleno),
    por la fracción de la ventana en que la GPU está ocupada: el tiempo de GPU ahorrado acorta el paso
    solo donde la GPU es el límite, y un paso limitado por el host oculta la mayor parte.
    gpu/gpt2_conv1d: 6.4 ms de GPU por paso, 30% ocupada (perfilado con pilas), 1.9 ms; medido sin
    profiler, el relleno ahorró 1.07-1.47 ms (el paso pasó a estar limitado por el host). Sin GEMMs
    alineados de ese tipo con los que comparar, o por debajo del 1% del paso, la regla calla. Los matmul de
    una atención escrita a mano de la que informa manual-attention quedan para ella:
    F.scaled_dot_product_attention los elimina sea cual sea la longitud (a los bmm de tl_h100_timesformer
    sobre 3137 tokens y de tl_h100_owlv2 sobre 5185 se les decía "rellena ... para un vocabulario": revisión 3
    del issue 35). Un GEMM cuya dimensión impar es una longitud de secuencia (dos veces entre M, N y K de un
    GEMM por lotes, como los de una atención, o los tokens por muestra que lee un embedding) se rellena
    rellenando cada secuencia, lo que paga todo el trabajo por token: donde eso cuesta más de lo que
    devuelven los GEMM (al menos la parte rellenada del tiempo de GPU), queda fuera.

    Solución:
    Rellena la dimensión hasta un múltiplo de 64: `vocab_size=50304` (los logits extra nunca son objetivo;
    recórtalos o déjalos), tamaños ocultos y de feed-forward en múltiplos de 64, lote x secuencia en
    múltiplos de 8. Una longitud de secuencia: rellena las secuencias hasta un múltiplo de 8
    (`pad_to_multiple_of=8` en el tokenizador o en el data collator, con el relleno enmascarado), o ejecuta la
    atención como F.scaled_dot_product_attention.

group-item = { $op } { $batched ->
        [yes] { $b }x{" "}
       *[no] {""}
    }{ $m }x{ $k } por { $k }x{ $n } { $dtype } { $calls }x: { $us } por paso a { $tflops } TFLOP/s ({ $kernel })
message = { $calls } llamadas GEMM sobre una dimensión que no es múltiplo de 8 ({ $dims }) tardan { $kernel_us } por
    paso, el { $gpu_share }% del tiempo de GPU, cuando los GEMMs alineados de esta traza con el mismo tipo van a
    { $reference } TFLOP/s: { $groups }.
advice = { $sequence ->
    [yes] { $dim } es una longitud de secuencia (tokens por muestra), no el tamaño de un peso: rellena las secuencias
        hasta { $pad_to } (un múltiplo de 8; pad_to_multiple_of=8 en el tokenizador o en el data collator, con el
        relleno enmascarado en la atención y en la pérdida), o ejecuta la atención como
        F.scaled_dot_product_attention, cuyos kernels fusionados aceptan cualquier longitud. cuBLAS elige entonces
        sus kernels alineados de tensor cores.
   *[no] Rellena { $dim } hasta { $pad_to } (un múltiplo de 64): para un vocabulario, crea el embedding y la capa de
        salida con el tamaño rellenado (los logits extra nunca son objetivo); tamaños ocultos y de feed-forward en
        múltiplos de 64, tokens por lote en múltiplos de 8. cuBLAS elige entonces sus kernels alineados de tensor
        cores.
  }
fix = { $sequence ->
    [yes] los GEMMs sobre la longitud de secuencia { $dim } van a una fracción del ritmo de la tarjeta,
        { $kernel_us } por paso: rellena las secuencias hasta { $pad_to } (pad_to_multiple_of=8).
   *[no] los GEMMs sobre la dimensión { $dim } van a una fracción del ritmo de la tarjeta, { $kernel_us } por paso:
        rellénala hasta { $pad_to } (un múltiplo de 64).
  }
basis = el tiempo de kernel de los GEMMs desalineados menos sus FLOPs al ritmo de { $reference } TFLOP/s de los
    GEMMs alineados ({ $gpu_saved_us } de tiempo de GPU { $per ->
        [step] por paso
       *[window] en la ventana
    }), por el { $busy }% de la ventana en que la GPU está ocupada: el tiempo de GPU ahorrado acorta el paso solo
    donde la GPU es el límite
call-note = { $tflops } TFLOP/s, frente a { $reference } de los GEMMs alineados
