## tanh-gelu: en español
title = La fórmula tanh de GELU corre como ocho operaciones donde basta un kernel

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    La aproximación tanh de GELU escrita con operaciones eager, como hacen `NewGELUActivation` de
    transformers (`activation_function="gelu_new"`: GPT-2, GPT-J, CodeGen, Phi...) y el antiguo
    `new_gelu` de nanoGPT: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))` despacha ocho
    operaciones (`aten::mul`, `aten::pow`, `aten::mul`, `aten::add`, `aten::mul`, `aten::tanh`,
    `aten::add`, `aten::mul`), ocho kernels, en cada bloque MLP de cada paso.

    Por qué:
    Cada operación es un despacho en el host y un lanzamiento de kernel, y cada kernel una pasada más
    sobre la activación; con autocast `pow` y `tanh` corren en fp32, así que la cadena además convierte.
    `F.gelu(x, approximate="tanh")` calcula la misma función en un kernel. Donde el host es el límite
    (decodificación, lotes pequeños) los ocho despachos son lo que la GPU espera.

    Ejemplo:
    gpu/kv_flash (GPT-2 124M, decodificación con lote 1, H200): 12 cadenas por token, 96 de sus 248
    kernels; la GPU está inactiva 2.1 ms del token de 17.2 ms bajo sus operaciones. gpu/gpt2_conv1d
    (entrenamiento, autocast bf16): 6 cadenas por paso en fp32.

    Impacto:
    Por paso, la inactividad de la GPU bajo las operaciones de las cadenas (el host despachándolas
    mientras la GPU espera) por (1 - 1/8): una operación en lugar de ocho. El tiempo de GPU de sus kernels
    no cuenta aquí (donde importa, unfused-elementwise señala las pasadas de la cadena sobre la memoria).
    gpu/kv_flash 1.8 ms por token (el 10.6% de los 17.2 ms perfilados; medido sin profiler,
    gelu_pytorch_tanh ahorró 1.0-2.3 ms de 5.4-8.4, gpu/gelu_decode.py). overhead-bound y launch-bound le dejan esta inactividad
    (`claimed_idle`). Por debajo del 1% del paso la regla calla.

    Solución:
    `torch.nn.functional.gelu(x, approximate="tanh")` en lugar de la fórmula; en transformers, carga el
    modelo con `activation_function="gelu_pytorch_tanh"` (`AutoConfig.from_pretrained(...,
    activation_function="gelu_pytorch_tanh")`), la misma función en un kernel.

message = { $chains } veces por paso la aproximación tanh de GELU se calcula operación a operación{ $fp32 ->
        [yes] {" "}en fp32 (autocast ejecuta pow y tanh en fp32)
       *[no] {""}
    }: { $ops } operaciones (aten::mul, aten::pow, aten::add, aten::tanh...) y sus kernels ({ $kernel_us } de
    GPU por paso) donde F.gelu(x, approximate='tanh') es una. La GPU está inactiva { $idle_us } por paso mientras
    el host las despacha.
advice = Usa torch.nn.functional.gelu(x, approximate='tanh'), la misma función en un kernel; en un modelo de
    transformers, pon activation_function='gelu_pytorch_tanh' en su configuración ('gelu_new' de GPT-2 es
    esta fórmula escrita a mano).
fix = La fórmula tanh de GELU corre como { $ops } operaciones { $chains } veces por paso: usa F.gelu(x,
    approximate='tanh') (transformers: activation_function='gelu_pytorch_tanh').
basis = la inactividad de la GPU bajo las operaciones de las cadenas mientras el host las despacha, por
    1 - 1/{ $ops } (una operación en lugar de la cadena), por paso; el tiempo de GPU de sus kernels no cuenta
chain-op = operación { $position } de una cadena tanh-GELU de { $of }
