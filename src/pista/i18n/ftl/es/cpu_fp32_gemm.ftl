## cpu-fp32-gemm: en español
title = GEMM en fp32 en una CPU con bf16 nativo
severity-exception = info donde la traza no dice que la CPU tenga GEMM en bf16 nativas (sin pista_host): el ahorro depende de la CPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    En una traza solo de CPU, las multiplicaciones de matrices (aten::mm, addmm, bmm, baddbmm, addbmm)
    se ejecutan en fp32 en una CPU con GEMM bf16 nativas (AVX512-BF16 o AMX) y ocupan una parte grande
    del paso. Las capacidades de la CPU no están en una traza de Kineto: la captura de pista (`pista
    run`, `pista profile`, los callbacks de entrenamiento) las escribe en la traza como `pista_host`;
    sin ellas la regla calla.

    Por qué:
    oneDNN ejecuta las GEMM en bf16 con AVX512-BF16 (`vdpbf16ps`) o con tiles AMX a dos o más veces la
    velocidad de fp32, y mueve la mitad de bytes. Con `torch.autocast("cpu", dtype=torch.bfloat16)` las
    GEMM van en bf16 mientras los parámetros, la pérdida y las reducciones que autocast deja en fp32
    siguen en fp32; para entrenar y para casi toda la inferencia los bits de mantisa perdidos no
    importan.

    Ejemplo:
    gpu/cpu_linear_host (`pista run linear --device cpu`: nn.Linear 1024, fp32, en una AMD EPYC de 2
    núcleos con AVX512-BF16): aten::addmm y aten::mm ocupan 24.3 ms de un paso de 26.9 ms. El mismo
    paso en bf16 (gpu/cpu_linear_bf16, `--dtype bf16`) tarda 14.3 ms, sus GEMM 12.0 ms (2.03x); sin
    profiler, el paso bajó de 37.6 a 18.6 ms con autocast.

    Impacto:
    El tiempo propio de CPU de las GEMM en fp32 por paso por 1 - 1/CPU_BF16_SPEEDUP (2.0, el par
    anterior; un matmul de 1024^3 fue 2.4-3.1 veces más rápido). Si cpu-threads encuentra núcleos
    parados, el tiempo de GEMM se escala antes al número total de hilos, para que los dos hallazgos no
    cuenten el mismo tiempo dos veces (gpu/cpu_linear_1thread: hilos 24.1 ms, luego bf16 12.1 ms, no
    24.4 ms). Una estimación: las CPU con AMX ganan más, las conversiones de autocast cuestan algo, y
    SDPA o las convoluciones que autocast también rebaja no se cuentan. Calla por debajo de
    MIN_STEP_SHARE. Sin `pista_host` (una traza de otra parte) habla solo si las GEMM en fp32 son
    MIN_UNKNOWN_CPU_SHARE del paso, como info, y dice cómo comprobar la CPU; si `pista_host` dice que
    la CPU no tiene GEMM en bf16, calla.

    Solución:
    Ejecuta la pasada hacia delante dentro de `with torch.autocast("cpu", dtype=torch.bfloat16):` (o
    guarda el modelo en bf16 para inferencia: `model.to(torch.bfloat16)`); `pista run WORKLOAD --device
    cpu --dtype bf16` lo mide en las cargas integradas.

check = lscpu | grep -oE 'avx512_bf16|amx_bf16'
message = { $ops } se ejecutan en fp32{ $has_rate ->
        [yes] {" "}a { $rate } GFLOP/s
       *[no] {""}
    }: { $gemm_us } por paso, el { $share }% del paso{ $dtype_known ->
        [no] {" "}(su dtype no se registró: record_shapes estaba desactivado; fp32 es el valor por defecto de torch)
       *[yes] {""}
    }{ $known_cpu ->
        [no] . La traza no dice qué CPU la grabó: si esa CPU tiene AVX512-BF16 o AMX ({ check }), las GEMM en bf16
            fueron { $speedup } veces más rápidas en una CPU así, unos { $saved_us } menos por paso; sin ellas bf16
            es más lento.
       *[yes] , en una CPU con { $isa } donde las GEMM en bf16 fueron { $speedup } veces más rápidas: unos
            { $saved_us } menos por paso{ $threads ->
                [yes] {" "}(contado tras la solución de cpu-threads: queda { $threads_scale } del tiempo de GEMM
                    con todos los núcleos)
               *[no] {""}
            }.
    }
advice = Ejecuta la pasada hacia delante dentro de un bloque torch.autocast("cpu", dtype=torch.bfloat16) (la pasada
    hacia atrás la sigue); en inferencia puedes guardar el modelo en bf16 (model.to(torch.bfloat16)). Revisa una vez
    la curva de pérdida o las salidas: bf16 conserva el rango de fp32 con menos bits de mantisa.
fix = { $known_cpu ->
    [no] { $op } se ejecuta en fp32: si la CPU tiene AVX512-BF16 o AMX ({ check }), torch.autocast("cpu",
        dtype=torch.bfloat16) ahorra hasta { $saved_us } por paso
   *[yes] { $op } se ejecuta en fp32 en una CPU con { $isa }: torch.autocast("cpu", dtype=torch.bfloat16) ahorra
        unos { $saved_us } por paso
  }
basis = el tiempo propio de CPU de las GEMM en fp32 por paso por 1 - 1/{ $speedup }, la aceleración en bf16 de las
    GEMM medida en una AMD EPYC de 2 núcleos con AVX512-BF16 (gpu/cpu_linear_host frente a gpu/cpu_linear_bf16); una
    estimación para otras CPU y formas{ $threads ->
        [yes] ; el tiempo de GEMM escalado antes por { $threads_scale }, los hilos que añadiría cpu-threads
       *[no] {""}
    }{ $known_cpu ->
        [no] ; condicional: la traza no dice que la CPU tenga GEMM en bf16
       *[yes] {""}
    }
fp32-call = GEMM en fp32{ $has_dims ->
        [yes] , entradas { $dims }
       *[no] {""}
    }{ $has_rate ->
        [yes] , { $rate } GFLOP/s
       *[no] {""}
    }
