## dominant-event: en español
title = Un solo kernel, copia u operación domina el tiempo de GPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Un kernel, una copia o un memset (o un operador, contando el trabajo de dispositivo que lanzó) se lleva
    la mayor parte del Self CUDA total, en una traza que no está limitada por el host. Para un GEMM la
    regla dice cómo de rápido va frente a la tarjeta: sus FLOP (2*M*N*K a partir de las formas registradas
    del operador que lo lanzó) entre su tiempo, junto al pico de la ficha técnica y al techo que un GEMM
    real alcanza en ella (`pista.efficiency`). Es también el hallazgo de compute-bound: el veredicto dice
    que la GPU es el límite; este dice adónde va su tiempo y si queda algo que ganar ahí.

    Por qué:
    Amdahl: recortar un 10% de un kernel que es el 95% del tiempo de GPU ahorra un 9.5%; hacer gratis todo
    lo demás ahorra un 5%. Pero un kernel que ya va en el techo de la tarjeta no tiene nada más que dar:
    solo menos trabajo o una precisión menor lo aceleran, y decir "optimízalo" manda al usuario a por nada.

    Ejemplo:
    `seed_mm4096_warm` (matmul_add eager a 4096, bf16, H200): nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT
    acumula el 80.3% de los 639.9 µs de Self CUDA, 3 llamadas de 171.2 µs: 2*4096^3 FLOP cada una, 803
    TFLOP/s, el 81% de los 989 bf16 densos de la H200 y por encima de los 757 medidos: déjalo (lo que gana
    el seed está en su suma del bias aparte). gpu/fp32_gemm: el GEMM fp32 de 4096 a 51.2 TFLOP/s está en el
    techo fp32 (50.9): la palanca es la precisión (fp32-gemm). gpu/pageable_memcpy: un Memcpy DtoH se lleva
    el 81.7%: una copia, no cómputo.

    Impacto:
    Lo que ahorraría ejecutar el kernel en el techo de la tarjeta para su dtype: por llamada, su tiempo
    menos FLOP / techo (0 para una llamada por encima del 90% del techo: la propia dispersión del techo
    de una ejecución a otra), sumado por paso; el techo está medido en la H200 (bf16 756.7, tf32 355.2,
    fp32 50.9 TFLOP/s...) y estimado a partir de la ficha técnica en las demás. seed_mm4096_warm,
    seed_mm4096_compile, gpu/kernel_variability: 0 (info). En un GEMM fp32 o fp64 el ahorro es de la
    precisión (fp32-gemm, fp64-gemm); en una copia, de las reglas de copias; en un kernel sin recuento
    de FLOP (no es un operador GEMM) no se estima: 0, dicho en la base. En una traza limitada por el
    host un kernel más rápido no ahorra nada (la GPU espera al host igualmente): ahí la regla calla
    (antes hablaba en gpu/recompile, gpu/trailing_sync, seed_mm64_compile). Antes era siempre info;
    ahora la gravedad sigue al impacto. El hallazgo aparte de compute-bound queda integrado aquí. Un GEMM al
    75% del techo o más (NEAR_PEAK_SHARE, en pista.rules._dominant) no reclama nada: el autoajuste no ganó
    nada medible en GEMM así (entre -30% y +0.5% en una H100 con las formas de tl_h100_qwen05,
    tl_compile_triton y tl_sglang_prefilldecode), y la revisión 3 del issue 35 marcó como engañoso "deja que
    max-autotune elija un kernel mejor" al 82-88%.

    Solución:
    Según lo que digan las cifras: en el techo, deja el kernel (menos trabajo, o fp8 donde la exactitud lo
    permita); cerca de él (75% o más), déjalo también y mira el resto del tiempo de GPU y el tiempo con la GPU
    inactiva; por debajo, formas que llenen la tarjeta (múltiplos de 64, GEMM pequeños agrupados, autoajuste
    con `torch.compile(mode="max-autotune")`); en fp32/fp64, una precisión menor; en una copia, menos bytes
    desde memoria fijada y sin bloquear. Si la traza está limitada por el host, arregla primero el host.

# the profiler's column, as it names it in every language
-self-cuda-total = Self CUDA total
how = { $measured ->
    [yes] medido
   *[no] estimado a partir de la ficha técnica
  }
shape = { $has_shape ->
    [yes] {" "}({ $shape })
   *[no] {""}
  }
rate = { $has_rate ->
    [yes] {" "}Hace { $gflop } GFLOP por llamada{ shape } a { $tflops } TFLOP/s{ $has_peak ->
        [yes] , el { $peak_share } del pico { $dtype } de la ficha técnica ({ $peak_tflops } TFLOP/s)
       *[no] {""}
      }{ $has_ceiling ->
        [yes] {" "}y el { $ceiling_share } del techo { $dtype } de { $ceiling_tflops } TFLOP/s de esta { $card } ({ how })
       *[no] {""}
      }.
   *[no] {""}
  }
verdict = { $verdict_key ->
    [compute-bound] la GPU es el límite
    [balanced] ningún lado domina
    [cpu-only] sin trabajo de GPU
   *[other] { $verdict }
  }
message = { $kind ->
    [kernel] El kernel
    [copy] La copia
    [memset] El memset
   *[op] El operador
  } { $name } acumula el { $share }% del { -self-cuda-total } de { $self_total_us }{ $launched ->
    [yes] , { $kind ->
        [copy] lanzada
       *[other] lanzado
      } por { $launched_by }
   *[no] {""}
  }: { $calls } llamada(s), { $total_us } en total, { $avg_us } por llamada de media.{ rate } La GPU está ocupada
    el { $busy }% de la ventana ({ $verdict }: { verdict }).{ $cause ->
    [below-ceiling] {" "}En el techo tardaría { $step_headroom_us } menos por paso.
   *[other] {""}
  }
below-advice = { $below ->
    [tiles] su forma { $mnk } deja a medias las teselas de los Tensor Cores: rellena M, N y K hasta múltiplos de 64
        (vocabulario, tamaño oculto y de lote)
    [small] cada llamada es demasiado pequeña para llenar la tarjeta: agrupa esos GEMM en uno (torch.bmm, un lote
        mayor) o captúralos en un CUDA graph
   *[autotune] deja que torch.compile(mode='max-autotune') elija un kernel mejor para esta forma, o prueba la otra
        disposición (transpón un operando); confirma con Nsight Compute (ncu) qué lo limita
  }
idle-part = el { $idle_pct }% de la ventana con la GPU inactiva
elsewhere = { $other_share ->
    [yes] ; mira después el otro { $other_pct }% del tiempo de GPU{ $idle_named ->
        [yes] {" "}y { idle-part }
       *[no] {""}
      }
   *[no] { $idle_named ->
        [yes] ; mira después { idle-part }
       *[no] {""}
      }
  }
kind-noun = { $kind ->
    [memset] un memset
   *[other] una copia
  }
advice = { $cause ->
    [transfer] { $short } es { kind-noun }: mueve o borra bytes, no calcula. Mueve menos bytes (deja los tensores en
        la GPU, copia una sola vez, un dtype más pequeño), copia desde memoria fijada con non_blocking=True para que
        se solape con el cómputo (ver pageable-memcpy) y agrupa las copias pequeñas en una.
    [at-ceiling] Deja { $short } como está: a { $tflops } TFLOP/s va tan rápido como esta tarjeta ejecuta { $dtype }.
        Solo menos trabajo lo acelera (menos GEMM o más pequeños){ $lower ->
            [fp8] {" "}o fp8 (torch._scaled_mm, TransformerEngine) donde la exactitud lo permita
            [bf16] {" "}o bf16 (torch.autocast) donde la exactitud lo permita
           *[none] {""}
        }{ $other_share ->
            [yes] ; el otro { $other_pct }% del tiempo de GPU es donde mirar después
           *[no] {""}
        }.
    [near-ceiling] Deja { $short } como está: a { $tflops } TFLOP/s, el { $ceiling_share } del techo { $dtype } de
        la tarjeta, va cerca de lo que un GEMM alcanza en esta tarjeta, y torch.compile(mode='max-autotune') no
        encuentra un kernel más rápido para GEMM así{ elsewhere }.
    [below-ceiling] { $short } va al { $ceiling_share } del techo { $dtype } de la tarjeta: { below-advice }.
    [precision] { $short } va en { $dtype } a { $tflops1 } TFLOP/s; la palanca es su precisión, no el kernel
        (ver { $precision ->
            [fp32] fp32-gemm: TF32
           *[fp64] fp64-gemm: fp32/TF32
        } o bf16, donde la exactitud lo permita).
    [unknown-card] { $short } va a { $tflops } TFLOP/s en { $has_dtype ->
            [yes] { $dtype }
           *[no] un dtype desconocido
        }; compáralo con la ficha técnica de tu tarjeta ({ $has_device ->
            [yes] { $device }
           *[no] la traza no nombra la GPU
        } no está en la tabla de picos de pista).
   *[other] { $elementwise ->
        [yes] { $short } no es un GEMM: un kernel limitado por memoria va tan rápido como los bytes que mueve;
            fusiónalo con sus vecinos (torch.compile) o evita la pasada, y mide su ancho de banda con Nsight
            Compute (ncu).
       *[no] { $short } no es un operador GEMM del que pista sepa contar los FLOP: mira qué lo limita con Nsight
            Compute (ncu) antes de cambiarlo.
    }
  }
fix = { $cause ->
    [at-ceiling] { $short } va a { $tflops } TFLOP/s, en el techo { $dtype } de esta tarjeta: déjalo, no hay nada
        que ganar en este kernel.
    [near-ceiling] { $short } va a { $tflops } de { $ceiling_tflops } TFLOP/s ({ $dtype }), cerca del techo de esta
        tarjeta: déjalo{ elsewhere }.
    [below-ceiling] { $short } va a { $tflops } de { $ceiling_tflops } TFLOP/s ({ $dtype }),
        { $step_headroom_us } por paso por ganar: { below-advice }.
    [transfer] { $short } es el { $share0 }% del tiempo de GPU: mueve menos bytes, desde memoria fijada con
        non_blocking=True.
    [precision] { $short } va en { $dtype }: baja su precisión (ver { $precision }-gemm).
   *[other] { $short } es el { $share0 }% del tiempo de GPU: mira qué lo limita con Nsight Compute (ncu).
  }
basis = { $cause ->
    [at-ceiling] { basis-ceiling }
    [below-ceiling] { basis-ceiling }
    [near-ceiling] nada reclamado: al { $ceiling_share } del techo { $dtype } de la tarjeta un GEMM va cerca de lo
        que da la tarjeta (max-autotune no encontró nada más rápido para GEMM así)
    [precision] no se cuenta aquí: lo que ahorra una precisión menor es de { $precision }-gemm
    [transfer] no se estima aquí: el coste de una copia es de las reglas de copias (pageable-memcpy, host-sync)
    [unknown-card] sin estimar: la GPU ({ $has_device ->
            [yes] { $device }
           *[no] sin nombre
        }) no está en la tabla de picos de pista
   *[other] sin estimar: no hay recuento de FLOP para este kernel (pista cuenta los FLOP de los operadores GEMM)
  }
basis-ceiling = por llamada, su tiempo menos sus FLOP al techo { $dtype } de la tarjeta ({ $ceiling_tflops }
    TFLOP/s, { how }), sumado por paso
instance = instancia más larga{ $has_tflops ->
    [yes] , { $tflops } TFLOP/s
   *[no] {""}
  }
