## unfused-epilogue: en español
title = El sesgo o la activación de una GEMM se ejecuta en un kernel aparte

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Una GEMM seguida de un kernel elemento a elemento aparte sobre su salida que el epílogo de la GEMM
    podría hacer: la operación justo después de un `aten::mm`/`matmul`/`bmm`/`linear`/`addmm` en el
    mismo padre es una suma de sesgo (`aten::add` de un vector del tamaño de la última dimensión de la
    salida, tras una GEMM sin sesgo propio: una suma del tamaño completo es una residual, no un sesgo)
    o una activación (`aten::relu`, `gelu`, `silu`, `sigmoid`, `tanh`), su primera entrada tiene la
    forma de la salida de la GEMM (según `Input Dims`) y su kernel corre en el stream de la GEMM.

    Por qué:
    Las GEMM de cuBLAS(Lt) aplican un sesgo (y, con `torch._addmm_activation`, ReLU/GELU) en el
    epílogo, mientras el bloque sigue en registros, casi gratis. Como kernel aparte, la misma suma lee
    y escribe otra vez toda la salida en memoria.

    Ejemplo:
    seed_mm4096_warm en una H200: `torch.add(torch.matmul(x, w), b)` a 4096 en bf16. La GEMM va a 803
    TFLOP/s (174.5 µs) y después `aten::add` lanza un `elementwise_kernel` de 41.6 µs, el 19.4% del
    tiempo de GPU. gpu/bias_unfused es igual (GEMM 177.7 µs + suma 42.1 µs); gpu/bias_addmm,
    `torch.addmm(b, x, w)`, ejecuta una sola GEMM `..._bias_NNT` de 178.9 µs. Sin profiler, el par
    eager tarda 217-220 µs por llamada, `addmm` 175 µs y `F.linear` 176 µs (REVIEW.md).

    Impacto:
    Por paso: el tiempo de los kernels elemento a elemento aparte, una cota superior (el epílogo
    cuesta un poco: 1.2 µs en gpu/bias_addmm). seed_mm4096_warm 41.3 µs (el 19.4% del paso, que dura
    sus 213 µs de trabajo de GPU), gpu/bias_unfused 41.9 µs (19.3%). Una suma residual tras una GEMM con
    sesgo propio (el `h + proj(a)` de los bloques GPT) no es un sesgo y no se señala. Nueva en el
    issue 15. En una traza solo de CPU los ops son el trabajo: el tiempo de CPU
    propio de la suma aparte (gpu/cpu_matmul_add, `pista run matmul_add --device cpu`: 3.05 ms de un
    paso de 33 ms, 9%, aviso).

    Solución:
    Pon el sesgo en la GEMM: `torch.addmm(b, x, w)` o `F.linear(x, w_t, b)` (lo que hace nn.Linear);
    para una activación, compila el bloque con `torch.compile` para fusionar la operación elemento a
    elemento (o usa `torch._addmm_activation` para ReLU/GELU).

pair-item = { $op } ({ $kind ->
        [bias] sesgo { $has_other ->
                [yes] { $other_shape }
               *[no] escalar
            }
       *[activation] activación
    }) sobre la salida { $has_out ->
        [yes] { $out_shape }
       *[no] escalar
    } de { $gemm }{ $has_parent ->
        [yes] {" "}en { $parent }
       *[no] {""}
    }, { $calls }x por paso: { $us } por paso tras { $gemm_us } de GEMM
message = { $pairs }. En total { $us } por paso, el { $gpu_share }% del tiempo de GPU y el { $step_share }% del
    paso, en kernels que el epílogo de la GEMM podría haber hecho.
bias-advice = Mete el sesgo en la GEMM: torch.addmm(bias, x, w) o F.linear(x, w.T, bias) (lo que hace nn.Linear)
    ejecuta una GEMM con el sesgo en el epílogo en lugar de una GEMM y una suma que vuelve a leer y escribir toda la
    salida.
activation-advice = Para la activación, compila el bloque con torch.compile (mode='max-autotune' puede fusionarla
    en el epílogo de la GEMM) o llama a torch._addmm_activation(bias, x, w, use_gelu=...) para relu/gelu.
advice = { $kinds ->
    [both] { bias-advice } { activation-advice }
    [bias] { bias-advice }
    [activation] { activation-advice }
   *[none] {""}
  }
fix = { $op } tras { $gemm }{ $has_parent ->
        [yes] {" "}en { $parent }
       *[no] {""}
    } ocupa { $pair_us } por paso: { $kind ->
        [bias] usa torch.addmm(bias, x, w) o F.linear(x, w.T, bias) para sumar el sesgo en el epílogo de la GEMM
       *[activation] compila el bloque con torch.compile para que { $op } se fusione en el epílogo de la GEMM (o
            torch._addmm_activation para relu/gelu)
    }
basis = tiempo por paso de los kernels elemento a elemento aparte (cota superior: el epílogo cuesta un poco, 1.2 µs
    en una GEMM bf16 de 4096 en la H200)
gemm-call = kernel GEMM { $kernel_us }
epilogue-call = { $kind ->
        [bias] suma de sesgo
       *[activation] activación
    } aparte sobre la salida de { $gemm }, kernel { $kernel_us }
