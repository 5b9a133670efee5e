## compute-bound: en español
title = Limitado por el cómputo: los GEMM frente al techo de la tarjeta

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El veredicto es compute-bound (la GPU está ocupada casi toda la ventana y el Self CUDA es del mismo orden
    que el Self CPU) con el tiempo de GPU repartido entre muchos kernels, y los GEMM en Tensor Cores entre
    ellos van claramente por debajo del techo de la tarjeta (o cerca de él mientras otro trabajo ocupa más
    GPU). Nombra los kernels GEMM con más tiempo por
    ganar: sus FLOP (de las formas registradas de los operadores que los lanzan) entre su tiempo, frente al
    techo de la tarjeta para su dtype (`pista.efficiency`).

    Por qué:
    Cuando la GPU es el límite, solo un trabajo de GPU más barato acorta el paso, y los GEMM son donde se
    conoce el pico de la tarjeta: un GEMM a la mitad del techo es tiempo que recuperar con mejores formas o
    kernels; uno en el techo, no. Decir solo "la GPU es el límite" repite el veredicto.

    Ejemplo:
    gpu/gpt_bf16_fused (paso de entrenamiento de un GPT, bf16, H200, compute-bound): su mayor GEMM,
    nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT, va a 729 TFLOP/s en 75 llamadas, cerca del techo
    bf16 medido de la H200 (757); el tiempo de los GEMM por encima del techo es 52.6 µs de un paso de 16.4 ms
    (0.3%), así que la regla calla: el tiempo del paso está en los demás kernels.

    Impacto:
    Por paso: la suma, sobre las llamadas GEMM en Tensor Cores (bf16, fp16, fp8, tf32), de su tiempo
    menos sus FLOP en el techo de la tarjeta (0 para las que pasan del 90% del techo, su propia
    dispersión); los kernels sin recuento de FLOP (convolución, atención, elemento a elemento) no
    cuentan, así que es una cota inferior del tiempo de GPU por ganar. Los GEMM fp32 y fp64 quedan para
    fp32-gemm/fp64-gemm (su palanca es la precisión). Por debajo del 1% del paso calla. Un kernel GEMM al
    75% del techo o más (NEAR_PEAK_SHARE, en pista.rules._dominant: el autoajuste no ganó nada medible ahí) no
    cuenta; donde todos los GEMM van ahí y otro tipo de trabajo ocupa más GPU que ellos, la regla lo dice como info, sin reclamar
    nada, y señala ese trabajo (tl_h100_qwen05: GEMM al 82% del techo, elemento a elemento el 56% del tiempo de
    GPU; la revisión 3 del issue 35 marcó como engañoso su "Empieza por el GEMM ... max-autotune"). Donde domina
    un kernel u operador lo dice dominant-event (con su eficiencia) y esta regla calla: un hallazgo, no dos
    (issue 14: antes imprimía "la GPU es el límite" junto a dominant-event en cada traza compute-bound,
    siempre como info).

    Solución:
    Para los GEMM nombrados por debajo del 75% del techo: formas que llenen la tarjeta (múltiplos de 64;
    agrupa los GEMM pequeños en uno), deja que `torch.compile(mode="max-autotune")` elija kernels para esas
    formas, y revisa el resto del tiempo de GPU (elemento a elemento, atención, el optimizador) con la tabla
    y Nsight Compute. Cerca del techo, deja los GEMM: el tiempo está en el otro trabajo.

kernel-item = { $name } ({ $calls } llamadas, { $total_us }, { $tflops } TFLOP/s { $dtype }, el { $share } de
    { $ceiling })
how = { $measured ->
    [yes] medidos
   *[no] estimados a partir de la ficha técnica
  }
# the purpose of the GPU work that takes the most time (pista.purpose.PURPOSES)
purpose = { $other ->
    [gemm] GEMM
    [conv] convolución
    [attention] atención
    [optimizer] optimizador
    [cast] conversiones
    [elementwise] elemento a elemento
    [reduction] reducciones
    [copy] copias
    [memset] memsets
    [communication] comunicación
    [compile] compilación
   *[other] otros
  }
message = { $kind ->
    [near] La GPU está ocupada el { $busy }% de la ventana sin que domine un solo kernel. Sus GEMM en Tensor Cores
        tardan { $gemm_step_us } por paso (el { $gemm_percent }% del tiempo de GPU) al { $span } de los techos de esta
        { $card } ({ how }): cerca de lo que un GEMM alcanza en esta tarjeta ({ $kernels }). El coste mayor está en
        otra parte: los kernels de { purpose } tardan { $other_us } por paso, el { $other_percent }% del tiempo de
        GPU.
   *[headroom] La GPU está ocupada el { $busy }% de la ventana (Self CUDA { $self_device_us }, Self CPU
        { $self_cpu_us }) sin que domine un solo kernel. Sus GEMM en Tensor Cores tardan { $gemm_us } y
        { $headroom_step_us } por paso más que en los techos de esta { $card } ({ how }); donde más hay que ganar:
        { $kernels }.
  }
advice = { $kind ->
    [near] Deja los GEMM como están: al { $span } del techo, torch.compile(mode='max-autotune') no encuentra un kernel
        más rápido para ellos; { $named ->
            [yes] empieza por el tiempo de { purpose } (el { $other_percent }% del tiempo de GPU): ver { $named_by }
           *[no] el tiempo de { purpose } (el { $other_percent }% del tiempo de GPU) está en la tabla
        }.
   *[headroom] Empieza por { $top } (el { $top_share } del techo { $top_dtype }): revisa sus formas (múltiplos de 64;
        agrupa los GEMM pequeños en uno) y deja que torch.compile(mode='max-autotune') elija kernels para ellas; el
        tiempo de GPU fuera de los GEMM (elemento a elemento, atención, el optimizador) está en la tabla.
  }
fix = { $kind ->
    [near] Los GEMM van al { $span } de los techos de la tarjeta: déjalos; los kernels de { purpose } (el
        { $other_percent }% del tiempo de GPU) son el coste mayor.
   *[headroom] { $top } va a { $top_tflops } de { $top_ceiling } TFLOP/s ({ $top_dtype }), { $top_headroom_us } por
        paso por ganar: corrige sus formas o autoajústalo (torch.compile(mode='max-autotune')).
  }
basis = { $kind ->
    [near] nada reclamado: un GEMM al 75% del techo de la tarjeta o más va cerca de lo que da la tarjeta (max-autotune
        no encontró nada más rápido para GEMM así)
   *[headroom] por llamada GEMM en Tensor Cores, su tiempo menos sus FLOP en el techo de la tarjeta ({ how }), sumado
        por paso; los kernels sin FLOP no cuentan (una cota inferior)
  }
slow-call = { $tflops } de { $ceiling } TFLOP/s; { $headroom_us } por encima del techo
