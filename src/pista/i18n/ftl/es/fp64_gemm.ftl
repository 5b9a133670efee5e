## fp64-gemm: en español
title = GEMMs en doble precisión (fp64)

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Multiplicaciones de matrices y convoluciones en doble precisión: ops GEMM cuyo `Input type` es double
    (tensores `torch.float64`, a menudo sin querer: `torch.from_numpy` de un array float64, una lista de
    floats de Python, `dtype=torch.double`), en kernels como `sm90_xmma_gemm_f64f64_...`.

    Por qué:
    Las unidades fp64 son una parte pequeña de una GPU: en una H200 los tensor cores fp64 llegan a 67
    TFLOP/s frente a 989 en bf16 y 494 en TF32 (unas 15x y 7x), y las tarjetas de consumo e inferencia
    (L4, T4) corren fp64 a 1/32-1/64 de fp32. El aprendizaje profundo rara vez necesita 53 bits de mantisa.

    Ejemplo:
    gpu/fp64_gemm en una H200: una matmul fp64 de 4096x4096x4096 corre `sm90_xmma_gemm_f64f64_f64f64_...`
    durante 2.29 ms por llamada (60 TFLOP/s, por encima de los 56 medidos); la misma en fp32 con TF32
    (gpu/tf32_gemm) tarda 0.343 ms.

    Impacto:
    Por paso: por llamada, su tiempo menos sus FLOPs al techo de la tarjeta en la precisión en que podría
    correr (TF32 donde la tarjeta lo tiene, si no fp32 donde fp32 es más rápido que fp64, de
    `pista.efficiency`), una cota superior (el algoritmo puede necesitar la precisión). gpu/fp64_gemm:
    1.94 ms de cada llamada de 2.29 ms.

    Solución:
    Deja los tensores en float32 (`.float()`, `torch.from_numpy(a).float()`, `torch.set_default_dtype(
    torch.float32)`) con `torch.set_float32_matmul_precision("high")`, o en bf16 con autocast; guarda
    float64 solo para las pocas reducciones que lo necesiten.

message = { $calls } llamada(s) GEMM en fp64 ({ $ops }; la mayor { $shape }) tardan { $gemm_us } en { $kernel } a
    { $tflops } TFLOP/s; en { $target } la { $has_card ->
        [yes] { $card }
       *[no] tarjeta
    } llega a { $target_tflops } TFLOP/s, { $saved_us } menos por paso.
advice = Deja los tensores de { $ops } en { $target_key ->
        [tf32] float32 con TF32 (torch.set_float32_matmul_precision('high'))
       *[fp32] float32
    } (o bf16 con autocast): busca dónde entra float64 (torch.from_numpy de un array float64, floats de Python,
    dtype=torch.double) y conviértelo una vez; guarda float64 solo para las reducciones que lo necesiten.
fix = { $op } corre en fp64 ({ $shape }, { $tflops } TFLOP/s): convierte sus entradas a float32 con TF32 o a bf16;
    ahorra hasta { $saved_us } por paso.
basis = por llamada, su tiempo menos sus FLOPs al techo { $target } de la tarjeta ({ $target_tflops } TFLOP/s), por
    paso (cota superior: el algoritmo puede necesitar fp64)
fp64-call = GEMM fp64 a { $tflops } TFLOP/s; { $saved_us } menos en una precisión más rápida
