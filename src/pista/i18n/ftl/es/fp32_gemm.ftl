## fp32-gemm: en español
title = GEMMs en fp32 completo sin Tensor Cores

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Multiplicaciones de matrices en fp32 completo en los núcleos CUDA en lugar de los Tensor Cores:
    operadores GEMM (aten::mm, addmm, bmm, matmul, linear...) cuyo `Input type` es float y cuyos kernels son
    de la familia SIMT fp32 (`sgemm`, `gemmSN`, `cutlass_80_simt_sgemm_*`, `xmma_gemm_f32f32_f32f32_f32_...
    _ffma_...` de cuBLAS), no los TF32 (`..._tf32f32_...`) ni los bf16/fp16.

    Por qué:
    Por defecto PyTorch hace las matmul fp32 con precisión completa (`torch.get_float32_matmul_precision()
    == "highest"`), lo que las deja fuera de los Tensor Cores. En Hopper eso limita un GEMM grande a unos 51
    TFLOP/s, mientras que TF32 hace la misma llamada varias veces más rápido y bf16 aún más; para entrenar
    y para casi toda la inferencia los bits de mantisa perdidos no importan. Las tarjetas anteriores a
    Ampere (V100, Turing) no tienen TF32: allí el camino a los Tensor Cores es la precisión mixta fp16;
    Pascal y anteriores no tienen Tensor Cores, y la regla calla. Las GeForce Ampere y Ada (RTX 30xx/40xx)
    hacen TF32 al ritmo fp32 de sus núcleos CUDA (whitepapers GA102 y Ada de NVIDIA: RTX 3090 35.6 y 35.6,
    RTX 4090 82.6 y 82.6 TFLOP/s): allí TF32 no ahorra nada, y autocast bf16 duplica el ritmo.

    Ejemplo:
    gpu/fp32_gemm en una H200: una matmul fp32 de 4096x4096x4096 con TF32 desactivado ejecuta
    `sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...` durante 2.684 ms (51.2 TFLOP/s). Con
    `torch.set_float32_matmul_precision("high")` (gpu/tf32_gemm) la misma matmul elige
    `sm90_xmma_gemm_f32f32_tf32f32_f32_...` y tarda 0.343 ms (400 TFLOP/s), 7.8 veces menos.

    Impacto:
    Por paso: lo que los GEMM fp32 ahorrarían en el techo TF32 de la tarjeta (fp16 en las que no tienen
    TF32, bf16 en las que TF32 no es más rápido que fp32): por llamada, su tiempo menos sus FLOP a ese techo (`pista.efficiency`; una llamada sin formas
    registradas se supone en el techo fp32 de la tarjeta). gpu/fp32_gemm: 2.30 ms de cada llamada de 2.68
    ms con los 355 TFLOP/s TF32 medidos en la H200 (la ejecución real en TF32 ahorró 2.34 ms), crítico. Una
    cota superior si la traza está limitada por el host (la GPU espera al host de todos modos). Por debajo
    del 1% del paso calla. Antes era un aviso costara lo que costara.

    Solución:
    `torch.set_float32_matmul_precision("high")` (o `torch.backends.cuda.matmul.allow_tf32 = True`) para
    usar TF32, o ejecuta el modelo bajo `torch.autocast("cuda", dtype=torch.bfloat16)`; deja "highest" solo
    donde la precisión extra haga falta de verdad. En V100/Turing: autocast fp16 con un GradScaler.

this-gpu = { $has_card ->
    [yes] { $card }
   *[no] esta GPU
  }
target-text = { $known ->
    [yes] el techo { $target_name } de esta { $card }, { $target_tflops } TFLOP/s ({ $measured ->
            [yes] medido
           *[no] estimado a partir de la ficha técnica
        })
   *[no] { $target_name } (supuesto { $speedup } veces más rápido: { this-gpu } no está en la tabla de picos de
        pista)
  }
message = { $kernels } kernel(s) GEMM{ $has_conv ->
        [yes] {" "}({ $conv_kernels } de ellos de cuDNN, para convoluciones)
       *[no] {""}
    } en fp32 completo en los núcleos CUDA{ $has_ops ->
        [yes] {" "}para { $ops }
       *[no] {""}
    }{ $has_shape ->
        [yes] {" "}(el más largo { $batched ->
                [yes] { $b } x{" "}
               *[no] {""}
            }{ $m }x{ $n }x{ $k })
       *[no] {""}
    }: { $gemm_us }, el { $share }% del tiempo de GPU{ $has_rate ->
        [yes] , a { $rate } TFLOP/s
       *[no] {""}
    }. En { target-text } tardarían { $saved_us } menos de tiempo de GPU por paso.{ $off_path ->
        [yes] {" "}Tal como se perfiló, el paso no los espera: la GPU está ocupada el { $busy }% de la ventana y el
            resto espera al host, así que el paso solo se acorta cuando el host mantenga ocupada la GPU (arregla eso
            primero, luego esto).
       *[no] {""}
    }
advice = { $target ->
    [bf16] En { this-gpu } (una GeForce) TF32 va al ritmo fp32 de los núcleos CUDA, así que
        torch.set_float32_matmul_precision('high') no ahorra nada: ejecuta los GEMM bajo torch.autocast('cuda',
        dtype=torch.bfloat16), el doble del ritmo fp32 en sus Tensor Cores.
    [fp16] { $has_card ->
            [yes] { $card }
           *[no] Esta GPU
        } no tiene TF32: lleva los GEMM a sus Tensor Cores fp16 con precisión mixta, torch.autocast('cuda',
        dtype=torch.float16) y un torch.cuda.amp.GradScaler para entrenar.
   *[tf32] Permite TF32 con torch.set_float32_matmul_precision('high') (o torch.backends.cuda.matmul.allow_tf32 =
        True), o ejecuta bajo torch.autocast('cuda', dtype=torch.bfloat16) para que los GEMM usen los Tensor Cores.
  }
fix = { $has_ops ->
        [yes] { $ops }
       *[no] los GEMM
    } { $single_op ->
        [yes] va
       *[no] van
    } en fp32 completo{ $has_rate ->
        [yes] {" "}a { $rate_round } TFLOP/s
       *[no] {""}
    }, { $gemm_step_us } por paso: { $target ->
        [fp16] torch.autocast('cuda', dtype=torch.float16)
        [bf16] torch.autocast('cuda', dtype=torch.bfloat16)
       *[tf32] torch.set_float32_matmul_precision('high')
    } ahorra unos { $saved_us } de tiempo de GPU por paso.
basis = { $off_path ->
    [yes] la reproducción de los pasos perfilados con los GEMM en { $target_name } no ahorra nada del paso: liberan
        { $saved_us } de tiempo de GPU por paso que el host aún no aprovecha
   *[no] por llamada GEMM fp32, su tiempo menos sus FLOP { $ceiling ->
            [yes] en el techo { $target_name } de la tarjeta
           *[no] con { $target_name } supuesto { $speedup } veces más rápido (GPU fuera de la tabla de picos)
        }, sumado por paso (una cota superior: los GEMM pequeños no llegan al techo, y si el host es el límite parte
        queda oculta)
  }
simt-kernel = kernel GEMM fp32 SIMT{ $has_rate ->
        [yes] , { $rate } TFLOP/s
       *[no] {""}
    }
float-op = { $has_dims ->
    [yes] Input type float, dimensiones { $dims }
   *[no] sin tipos de entrada registrados (record_shapes=False)
  }
