## manual-attention: en español
title = Atención escrita operación a operación: cada paso recorre el tensor de puntuaciones entero

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Atención escrita operación a operación en lugar de un kernel fusionado: `q @ k^T`, una escala, una
    máscara causal (`masked_fill`, `where` o una máscara sumada), `softmax`, dropout, `@ v`, como hacen
    nanoGPT sin flash, la atención "eager" de transformers y muchos modelos escritos a mano. Cada
    operación entre los dos matmul lee y escribe el tensor de puntuaciones entero (lote, cabezas,
    consultas, claves), hacia delante y hacia atrás, y autocast ejecuta el softmax en fp32, así que las
    puntuaciones además se convierten en ambos sentidos.

    Por qué:
    El tensor de puntuaciones crece con el cuadrado de la secuencia: con 1024 tokens, 12 cabezas y un
    lote de 8 son 100 M elementos, 400 MB en fp32, en cada capa. `F.scaled_dot_product_attention`
    (flash o atención eficiente en memoria) nunca lo escribe: calcula el softmax por bloques dentro del
    chip, así que la escala, la máscara, el softmax, el dropout y las conversiones no cuestan ninguna
    pasada por memoria, y su memoria queda libre.

    Ejemplo:
    gpu/attn_manual (un GPT de 6 bloques, d=768, lote 8 x 1024, autocast bf16, H200): 36 operaciones por
    paso entre los matmul de la atención lanzan 7.4 ms de kernels hacia delante y 8.2 ms hacia atrás
    (masked_fill 3.5 ms, las puntuaciones convertidas a fp32 y de vuelta, softmax, dropout); sin profiler
    el paso tarda 37.3 ms, y 17.4 ms con `F.scaled_dot_product_attention(q, k, v, dropout_p=0.1,
    is_causal=True)` (gpu/attn_sdpa). GPT-2 de transformers con `attn_implementation="eager"`
    (gpu/attn_hf_eager): 14.1 ms de kernels sobre las puntuaciones por paso; 36.1 ms sin profiler frente
    a 23.1 ms con "sdpa".

    Impacto:
    Por paso, el tiempo de kernel de las operaciones entre los dos matmul (escala, máscara, softmax,
    dropout y conversiones de las puntuaciones) y de sus nodos backward (emparejados por el número de
    secuencia de autograd), por la fracción de la ventana en que la GPU está ocupada (un paso limitado
    por el host oculta una parte). No cuentan los matmul, que el kernel fusionado aún calcula, aunque más
    rápido. gpu/attn_manual 15.2 ms de 35.7 (42.5%, 97% ocupada; medido sin profiler, 19.9 ms
    ahorrados), gpu/attn_hf_eager 8.8 ms de 53.5 (16.5%, 63% ocupada con el profiler; medido 13.0 ms). Por debajo del 1% del paso la regla calla.

    Solución:
    `torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
    is_causal=True)` en lugar de la atención escrita a mano (nanoGPT: `flash=True`); en transformers,
    `attn_implementation="sdpa"` (o "flash_attention_2") al cargar el modelo.

shape = { $has_shape ->
    [yes] {" "}sobre puntuaciones { $shape }
   *[no] {""}
  }
message = { $layers } atenciones por paso calculan softmax(q k^T) v operación a operación{ shape }: entre los dos
    matmul, { $ops } recorren cada una el tensor de puntuaciones, { $forward_us } de kernels por paso hacia delante
    y { $backward_us } hacia atrás. Un kernel de atención fusionado nunca escribe las puntuaciones: unos
    { $saved_us } menos de GPU por paso.
advice = Llama a torch.nn.functional.scaled_dot_product_attention{ $masked ->
        [yes] (q, k, v, dropout_p=p, is_causal=True) para una máscara causal (triangular), attn_mask=mask para
            cualquier otra (una máscara de relleno)
       *[no] (q, k, v, dropout_p=p)
    } en lugar del código matmul-máscara-softmax-matmul (nanoGPT: flash=True); en un modelo de transformers,
    cárgalo con attn_implementation='sdpa' (o 'flash_attention_2'). También desaparece la memoria de las
    puntuaciones.
fix = La atención corre operación a operación{ shape }, { $saved_us } de kernels sobre las puntuaciones por paso:
    usa F.scaled_dot_product_attention (transformers: attn_implementation='sdpa').
basis = el tiempo de kernel de las operaciones entre los matmul de la atención y de sus nodos backward
    ({ $saved_us } { $per_step ->
        [yes] por paso
       *[no] en la ventana
    }), por el { $busy }% de la ventana en que la GPU está ocupada; los matmul, que un kernel fusionado aún
    calcula, no cuentan
score-kernel = una pasada sobre las puntuaciones ({ $op }{ $backward ->
    [yes] , backward
   *[no] {""}
  })
