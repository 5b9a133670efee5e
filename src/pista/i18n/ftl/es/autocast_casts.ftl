## autocast-casts: en español
title = autocast convierte los mismos pesos fp32 en cada paso

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Bajo `torch.autocast`, los pesos fp32 se convierten a bf16/fp16 otra vez en cada paso: kernels de
    copia (`bfloat16_copy_kernel`, `direct_copy_kernel_cuda`) bajo `aten::linear > aten::to >
    aten::_to_copy` cuyo tensor es el peso o el sesgo de la operación (sus `Input Dims` después de la
    primera entrada), y en el backward sus gradientes se convierten de vuelta a fp32 (`ToCopyBackward0`
    con el mismo número de secuencia de autograd). Las conversiones de activaciones y las llamadas
    explícitas a `.float()`/`.to()` se cuentan aparte.

    Por qué:
    autocast mantiene los parámetros en fp32 y convierte cada uno al usarlo; cada conversión recorre
    el peso en memoria (lee fp32, escribe bf16) y su gradiente de vuelta (lee bf16, escribe fp32), en
    cada paso, para los mismos pesos, y cada una es una operación que el host despacha (aten::to >
    _to_copy > copy_ en el forward, ToCopyBackward0 en el backward). Guardar los pesos en bf16 quita
    las dos.

    Ejemplo:
    gpu/gpt_autocast en una H200 (GPT de 6 capas, d=1024, parámetros fp32 bajo autocast bf16): los
    kernels de conversión ocupan 1.442 ms por paso, el 9.2% del tiempo de GPU; 100 por paso son los 50
    pesos y sesgos y sus gradientes (527 µs por paso), el resto son activaciones alrededor de las
    LayerNorm y sumas residuales en fp32 y el `.float()` de la pérdida; el host pasa 2.96 ms por paso
    en las operaciones de conversión de los pesos. gpu/gpt_bf16_fused, el mismo
    GPT con parámetros bf16, solo convierte la pérdida (289 µs por paso). Sin profiler, en GPT n=6 los
    kernels de conversión ocupan 1.95 ms por paso con parámetros fp32 y 1.10 ms con bf16, y el paso
    11.8 frente a 8.8 ms (REVIEW.md). Medido de nuevo en la H200 para esta regla con el MLP de
    series_mlp_eager y AdamW fusionado: 3.03-3.21 ms por paso con parámetros fp32 bajo autocast,
    2.24-2.34 ms con parámetros bf16 y sin autocast.

    Impacto:
    Por paso: el tiempo de kernel de las conversiones de pesos, forward y backward, por la fracción de
    la ventana en que la GPU está ocupada (un paso limitado por el host oculta el resto: en run_mlp_stack
    la reproducción de un experto sin las conversiones ahorró ~750 µs donde el tiempo de kernel entero
    daba 811), más el tiempo de host de sus operaciones (`aten::to` bajo la operación, `ToCopyBackward0`) durante el que la GPU
    está inactiva: con los pesos en bf16 no se despacha ninguna. Solo las conversiones, no una cota
    superior: con parámetros bf16 también se abaratan las operaciones fp32 de alrededor (una copia bf16
    de un maestro fp32 aún cuesta una escritura por paso, y el tiempo de kernel solo ahorra tiempo real donde
    la GPU es el límite). gpu/gpt_autocast 2.04 ms (527 µs de kernels al 56% ocupada + 1.75 ms de host
    expuesto, el 8.1%), big_gpt_eager_20steps 5.84 ms (11.1%), series_mlp_eager 1.02 ms (14.8%),
    run_mlp_stack 686 µs (14.9%): trazas limitadas
    por el host, donde lo que más ahorra es el despacho. Antes solo se contaban los kernels (info en las
    tres); el GPT n=6 medido sin profiler ahorra 3.0 ms por paso con pesos bf16, mucho más que sus
    0.85 ms de kernels de conversión. Nueva en el issue 15.

    Solución:
    Guarda los pesos en bf16: `model.to(torch.bfloat16)` con una copia maestra fp32 en el optimizador
    (o estado del optimizador en bf16 donde converja), o compila el modelo con `torch.compile` para
    que las conversiones se fusionen con sus vecinos.

shape = { $has_shape ->
    [yes] { $shape }
   *[no] escalar
  }
shape-item = { shape } { $per_step }x { $us }
message = { $weights } pesos y sesgos { $source } de { $ops } se convierten a { $target } en cada paso y sus
    gradientes se convierten de vuelta: { $casts } kernels de conversión por paso ocupan { $weight_us }
    ({ $forward_us } en forward, { $backward_us } en backward), el { $weight_share }% del tiempo de GPU (por paso y
    forma: { $shapes }), y el host pasa { $host_us } por paso despachándolas, { $exposed_host_us } de ellos con la
    GPU inactiva: el { $share }% del paso en total. Todos los kernels de conversión ocupan { $cast_us } por paso (el
    { $cast_share }% del tiempo de GPU); los otros { $other_cast_us } son activaciones y llamadas explícitas
    a .to()/.float().
advice = Guarda los pesos en { $target }: model.to(torch.{ $torch_dtype }) con una copia maestra fp32 de los
    parámetros en el optimizador, para que no haya conversiones en el forward ni gradientes convertidos de vuelta; o
    compila el modelo con torch.compile, que fusiona las conversiones con sus vecinos. Ejecutar todo el modelo en ese
    dtype sin autocast quita también las conversiones de activaciones alrededor de operaciones fp32.
fix = autocast convierte { $weights } pesos de { $ops } en cada paso, { $weight_us } de kernels de conversión y
    { $exposed_host_us } de despacho expuesto en el host por paso con sus gradientes: guarda los pesos en
    { $target } (model.to(...), copia maestra fp32 en el optimizador)
basis = tiempo de kernel de las conversiones de pesos por paso, forward y backward, por la fracción ocupada de la
    GPU (un paso limitado por el host oculta el resto), más el tiempo de host de sus operaciones de conversión con la
    GPU inactiva; solo las conversiones: con parámetros bf16 también se abaratan las operaciones fp32 de alrededor
    (el GPT de REVIEW.md: 11.8 -> 8.8 ms por paso sin profiler, sus conversiones 1.95 -> 1.10 ms)
weight-cast = conversión de un peso { shape } para { $op }, kernel { $kernel_us }
grad-cast = su gradiente { shape } convertido de vuelta, kernel { $kernel_us }
