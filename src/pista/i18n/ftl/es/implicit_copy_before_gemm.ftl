## implicit-copy-before-gemm: en español
title = El memset/copia propio de la biblioteca GEMM antes de cada GEMM cuesta tiempo de GPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Un `Memset` o un `Memcpy DtoD` que el programa nunca pidió, lanzado por un operador GEMM (aten::mm,
    aten::addmm, una convolución de cuDNN...) justo antes del propio kernel GEMM de ese operador en el mismo
    stream, cuando entre todos cuestan una parte medible del paso. Por debajo de eso la regla calla: el
    memset es normal.

    Por qué:
    cuBLAS/cuBLASLt (y cuDNN) limpian unos bytes de su espacio de trabajo antes de muchos kernels GEMM: los
    nvjet cooperativos (`..._coopA_...`, `..._coopB_...`), los xmma con segment-K, los GEMM SIMT de CUTLASS,
    las convoluciones implicit-GEMM. Es un `Memset (Device)` de 4 bytes antes de cada una de esas llamadas,
    con epílogo o sin él: el aten::mm simple de seed_mm4096_warm lo tiene igual que el addmm compilado con
    bias de seed_mm4096_compile (la documentación de esta regla culpaba al epílogo fusionado; se
    equivocaba). En la GPU cuesta el memset (menos de 1 µs) y el hueco antes del GEMM; en el host, un
    cudaMemsetAsync más por GEMM, que es sobrecarga del host como cualquier lanzamiento. Para GEMM grandes no
    es nada; solo se nota con muchos GEMM pequeños en un stream limitado por la GPU, y explica filas
    "Memset (Device)" en la tabla que ninguna línea del programa escribió.

    Ejemplo:
    `seed_mm4096_compile` (matmul_add compilado a 4096, addmm con epílogo de bias): en cada paso aten::addmm
    emite cudaMemsetAsync (13.7-19.4 µs de host) y un Memset (Device) de 0.768 µs en el stream 7; después
    nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT empieza 19.8-24.0 µs más tarde, cuando el host lo
    ha lanzado: la GPU perdió los 0.8 µs del memset, el 0.2% del paso.

    Impacto:
    Por paso, lo que la GPU ganaría sin los memsets: cuando el GEMM ya estaba encolado al ejecutarse el
    memset, el tiempo desde el inicio del memset hasta el inicio del GEMM (el memset y el hueco que añade);
    cuando la GPU esperaba a que el host lanzara el GEMM, solo el tiempo del propio memset (el
    cudaMemsetAsync del host es sobrecarga del host, que cuenta overhead-bound). Calla por debajo del 1.5%
    del paso, donde el paso es al menos el trabajo de GPU que contiene (en una traza limitada por la GPU los
    ProfilerStep terminan cuando el host ha encolado el paso: los de seed_mm4096_warm duran 160 µs para
    213 µs de trabajo de GPU por paso). En los fixtures calla en todos: seed_mm4096_warm 0.9%, gpu/bias_addmm
    1.0%, gpu/resnet50_bf16 0.4%, gpu/gpt_bf16_fused 0.2%, big_gpt_eager_20steps 0.05%; antes saltaba (info)
    en cada traza con un GEMM addmm.

    Solución:
    Normalmente nada. Cuando importa (muchos GEMM pequeños, limitado por la GPU): captura el paso como CUDA
    graph (`torch.compile(mode="reduce-overhead")`), agrupa los GEMM pequeños en uno (bmm), o prueba otra
    disposición o dtype, que puede elegir un kernel sin el memset previo.

group-item = { $count } x { $fill } de { $op } antes de { $gemm }{ $steps ->
        [one] {" "}en el paso { $step_list }
        [few] {" "}en los pasos { $step_list }
        [range] {" "}en los pasos { $first }-{ $last } ({ $n } pasos)
       *[none] {""}
    }
message = { $pairs } memset/copia que el programa no escribió se ejecutaron justo antes del kernel GEMM de su propio
    operador: { $groups }{ $more ->
        [yes] ; y { $more_groups } tipo(s) más
       *[no] {""}
    }. { $device_us } en la GPU y { $host_api_us } de llamadas a la API en el host; el GEMM empieza entre
    { $gap_min_us } y { $gap_max_us } después, ya encolado en { $queued } de { $pairs } casos. Sin ellos la GPU
    ganaría { $cost_us } por paso, el { $share }% del paso.
advice = La biblioteca GEMM (cuBLAS, cuDNN) limpia su espacio de trabajo antes de cada llamada a { $gemm }; aquí
    cuesta tiempo porque los GEMM son muchos y cortos. Agrúpalos en menos GEMM y más grandes (torch.bmm, un lote
    mayor), o captura el paso como CUDA graph (torch.compile(mode='reduce-overhead')); otra disposición o dtype puede
    elegir un kernel sin el memset.
fix = { $op } limpia el espacio de trabajo de la biblioteca GEMM antes de cada una de sus { $count } llamadas a
    { $gemm }, { $cost_us } de tiempo de GPU por paso: agrupa los GEMM pequeños o captura el paso como CUDA graph.
basis = el tiempo de GPU desde el inicio de cada memset hasta el inicio de su GEMM cuando el GEMM ya estaba encolado,
    solo el memset cuando la GPU esperaba al host, por paso
fill = lanzado dentro de { $op }; cuesta a la GPU { $cost_us }
fill-call = su llamada a la API en el host, { $dur_us }
gemm-after = el GEMM, empieza { $gap_us } después en el mismo stream{ $queued ->
        [yes] {" "}(ya encolado)
       *[no] {" "}(lanzado después)
    }
