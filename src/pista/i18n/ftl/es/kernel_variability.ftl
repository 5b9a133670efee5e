## kernel-variability: en español
title = El mismo kernel varía de una llamada a otra

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El mismo kernel haciendo el mismo trabajo tarda muy distinto de una llamada a otra o de un paso a otro:
    el mismo nombre, la misma configuración de lanzamiento (grid y block), lanzado por un operador con las
    mismas entradas registradas (`Input Dims`, `Input type`, `Concrete Inputs`) y como el mismo lanzamiento
    dentro de esa llamada del operador (una convolución de cuDNN lanza su kernel de relleno dos veces, sobre
    dos tensores distintos). La cola de su distribución (p95, máximo) queda muy por encima de su mediana,
    más allá del ruido del temporizador y de los relojes, y las llamadas lentas cuestan una parte medible
    del paso.

    Por qué:
    Lanzamientos idénticos con trabajo idéntico deberían tardar lo mismo. Una dispersión grande significa
    que algo fuera del kernel cambia: otros streams o procesos compartiendo los SM, relojes o potencia que
    bajan, cachés o TLB frías tras otro trabajo, trabajo que depende de los datos (ordenaciones,
    operaciones dispersas). La media lo esconde; las llamadas lentas son las que estiran el paso. Las
    llamadas con entradas distintas son trabajo distinto: sus tiempos difieren solo por eso y no dicen nada.

    Ejemplo:
    `tests/fixtures/gpu/kernel_variability` (un mul elemento a elemento sobre 64 MiB, 8 llamadas por paso, y
    un segundo stream con GEMMs en los pasos 3 y 6): vectorized_elementwise_kernel grid [32768,1,1] block
    {""}[128,1,1], 48 llamadas, mediana 33.5 µs, p95 53.2 µs (1.59x), máximo 54.2 µs; su mediana por paso es
    32.0-32.2 µs salvo 50.7 µs y 51.8 µs en los pasos 3 y 6.

    Impacto:
    Por paso: el tiempo que las llamadas pasan por encima de la mediana de su propio grupo (mismo kernel,
    lanzamiento y entradas), sumado y dividido entre los pasos: gpu/kernel_variability 240 µs en 6 pasos,
    40 µs de un paso mediano de 406 µs (9.9%, aviso). Una cota superior: una llamada lenta en un stream
    lateral puede quedar oculta tras el trabajo del stream principal. Por debajo del 1% del paso calla.
    Antes era un aviso costara lo que costara, y agrupaba las llamadas solo por nombre, lanzamiento y
    formas de entrada: en gpu/resnet50_bf16 señalaba nhwcAddPaddingKernel de cuDNN (1.9 µs rellenando los
    pesos, 86 µs rellenando la entrada, ambos dentro de una misma convolución) y kernels de batch norm
    lanzados fuera de cualquier operador (sin entradas que comparar); ambos han desaparecido.

    Solución:
    Busca qué se solapa con las llamadas lentas (las marcas de tiempo de la evidencia; otros streams, otros
    procesos, nvidia-smi para los relojes), serializa o separa el trabajo que compite, calienta las cachés,
    fija los relojes para medir y compara medianas por paso en lugar de medias.

config-item = { $has_config ->
    [yes] { $config }
   *[no] sin configuración de lanzamiento en la traza
  }
inputs-item = entradas { $dims }
launch-item = lanzamiento { $launch } dentro de su operador
message = { $kernel } ({ $what }) en { $calls } llamadas con las mismas entradas: mínimo { $min_us }, mediana
    { $median_us }, p95 { $p95_us } ({ $p95_ratio }x), máximo { $max_us } ({ $max_ratio }x); las llamadas por encima
    de la mediana cuestan { $excess_us } más de lo que costaría la mediana, { $step_excess_us } por paso (el
    { $share }% del paso).{ $slow ->
        [none] {""}
        [one] {" "}Mediana por paso { $min_med }-{ $max_med } µs; lento en el paso { $slow_list }.
       *[many] {" "}Mediana por paso { $min_med }-{ $max_med } µs; lento en los pasos { $slow_list }.
    }
advice = Mira qué más se ejecuta { $slow ->
        [none] en las llamadas más lentas
        [one] en el paso { $slow_list }
       *[many] en los pasos { $slow_list }
    } junto a { $kernel } (otros streams, otros procesos, relojes: nvidia-smi), separa o serializa el trabajo que
    compite, y compara medianas por paso en lugar de medias.
fix = { $kernel } tarda hasta { $max_ratio_1 } veces su mediana con las mismas entradas{ $slow ->
        [none] {""}
        [one] {" "}en el paso { $slow_list }
       *[many] {" "}en los pasos { $slow_list }
    }, { $step_excess_us } por paso: encuentra y separa el trabajo que compite con sus llamadas lentas.
basis = el tiempo de las llamadas por encima de la mediana de las llamadas con el mismo kernel, lanzamiento y
    entradas, sumado por paso (una cota superior: una llamada lenta fuera del camino crítico no cuesta nada)
slow-call = { $ratio }x la mediana
typical-call = una llamada típica (la más cercana a la mediana de { $median_us })
