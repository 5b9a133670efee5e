## compile-overhead: en español
title = El envoltorio por llamada de torch.compile deja la GPU inactiva
severity-exception = info donde la envoltura expuesta puede ser el coste del propio profiler (con la condición dicha)

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El coste de host por llamada de torch.compile deja la GPU sin trabajo. Cada llamada a una función
    compilada recorre las guardas (`TorchDynamo Cache Lookup`), entra en la `Torch-Compiled Region`,
    ejecuta `Pregraph bytecode` y el `AOTDispatcher Runtime Wrapper Prologue` y luego el envoltorio
    generado (`## Call CompiledFxGraph ...`) antes del primer lanzamiento; la regla suma ese tiempo de
    host (la región menos los ops aten, los lanzamientos y el trabajo del profiler que contiene) y mide
    qué parte corre con la GPU inactiva.

    Por qué:
    El grafo compilado ahorra trabajo por kernel, pero el envoltorio cuesta unos cientos de µs fijos de
    Python por llamada. Si la llamada lanza un kernel de 2 µs, el envoltorio es el tiempo de ejecución y el
    paso compilado puede ser más lento que el eager. Mientras la GPU tenga trabajo en cola, ese tiempo de
    host se oculta y no cuesta nada.

    Ejemplo:
    `torch.compile(matmul_add)` a 64x64 en bf16 en una H200 (seed_mm64_compile): por llamada 34 µs de
    búsqueda en caché y 345 µs en `Torch-Compiled Region: 0/1`, de ellos 115 µs de aten::addmm, para un
    kernel de 2.1 µs. A 4096 (seed_mm4096_compile) el mismo envoltorio cuesta unos 200 µs por llamada
    para un GEMM de 175 µs.

    Impacto:
    El tiempo de host del envoltorio (búsqueda en caché más la región sin su carga útil) durante el que
    no corría ningún trabajo en la GPU, en el paso mediano: lo oculto tras la GPU no ahorra nada, y el
    primer paso de una ventana suele empezar con la cola vacía (capture_mm4096_compile: 169, 0 y 0 µs por
    paso, así que no se reporta). seed_mm64_compile 228 µs de 422 (54%, critical); series_mlp_compile
    2.34 ms de 8.44 (28%, critical); capture_mlp_compile 794 µs de 4.40 ms (18%, warning). Cuando el
    trabajo de GPU por llamada llega a la mitad del envoltorio, la exposición puede ser del profiler
    (seed_mm4096_compile: 142 µs de 368 perfilados, pero sin profiler el paso tarda 182 µs con 174 µs de
    GPU; gpu/elementwise_compiled 92 µs de 199, 46%): el mensaje lo dice y el hallazgo es info, como un
    coste latente, con esa condición. Antes se disparaba por la razón entre tiempo de host y de GPU
    (0.5x), contando también el tiempo oculto, siempre como warning.

    Solución:
    Nunca "prueba torch.compile": el código ya está compilado. Usa `mode="reduce-overhead"` (CUDA
    graphs) para reproducir los lanzamientos sin el envoltorio de Python; donde el envoltorio domina, da
    más trabajo a cada llamada (compila el paso entero, lotes más grandes).

graphs = torch.compile(mode='reduce-overhead') para reproducir los lanzamientos como CUDA graph sin el Python del
    envoltorio
change-text = { $change ->
    [op-by-op] compila con un backend que genere código (backend='inductor', el de torch.compile por defecto, no
        'aot_eager' ni un compilador nulo o de TorchScript para AOTAutograd), para que las ops del grafo se fusionen
        en kernels lanzados desde un único envoltorio generado, y luego usa { graphs }
    [eager] compila con las llamadas compiladas lo que el paso ejecuta en eager a su alrededor ({ $eager_ops }:
        { $eager_idle_us } de GPU inactiva por paso bajo ellas), para que un solo grafo contenga el paso, y usa
        { graphs }
    [dominates] da más trabajo a cada llamada compilada (compila el paso entero en lugar de funciones pequeñas,
        lotes más grandes) y usa { graphs }
   *[graphs] usa { graphs }
  }
who = { $single ->
    [yes] { $region }
   *[no] Cada llamada compilada ({ $regions })
  }
message = { $op_by_op ->
    [yes] { $calls } llamada(s) compiladas ({ $regions }) ejecutan su grafo operación a operación: { $ops } ops aten
        por llamada y ningún kernel generado, con { $call_us } de host por llamada entre esas ops y alrededor (el
        Python del grafo, no un envoltorio) para { $gpu_us } de trabajo de GPU lanzado por llamada. { $exposed_us }
        de ese tiempo corre con la GPU inactiva: { $step_us } en el paso mediano, el { $share }% del tiempo del paso.
   *[no] { $calls } llamada(s) compiladas ({ $regions }) pasan { $wrapper_us } de host en el envoltorio de
        torch.compile (búsqueda en caché, guardas, prólogo, envoltorio generado; { $call_us } por llamada) para
        { $gpu_us } de trabajo de GPU lanzado por llamada. { $exposed_us } de ese tiempo corre con la GPU inactiva:
        { $step_us } en el paso mediano, el { $share }% del tiempo del paso.{ $profiler ->
            [yes] {" "}El trabajo de GPU por llamada casi cubre el envoltorio: sin el profiler (que casi duplica el
                tiempo de host de bucles densos en operaciones) el host podría adelantarse y ocultarlo; mide el paso
                sin perfilar antes de actuar.
           *[no] {""}
        }
  }
advice = { $op_by_op ->
    [yes] Cada llamada ejecuta { $ops } ops aten una a una: { change-text }.
   *[no] Cada llamada lanza { $gpu_us } de trabajo de GPU tras { $call_us } de envoltorio: { change-text }; mantén
        estáticas las formas de entrada para que el grafo se reutilice.{ $backward ->
            [yes] {" "}El backward compilado (CompiledFunctionBackward) se captura con él.
           *[no] {""}
        }{ $profiler ->
            [yes] {" "}Comprueba antes el coste sin perfilar: puede ser del profiler.
           *[no] {""}
        }
  }
fix = { $op_by_op ->
    [yes] { who } ejecuta su grafo operación a operación ({ $ops } ops aten por llamada, ningún kernel generado),
        { $step_us } por paso con la GPU inactiva: { change-text }.
   *[no] { who } pasa { $call_us } por llamada en el envoltorio de compilación para { $gpu_us } de trabajo de GPU,
        { $step_us } por paso con la GPU inactiva: { change-text }{ $profiler ->
            [yes] {" "}(si persiste sin perfilar).
           *[no] .
        }
  }
basis = { $op_by_op ->
    [yes] el tiempo de host entre las ops del grafo compilado con la GPU inactiva, en el paso mediano
   *[no] el tiempo de host del envoltorio (búsqueda en caché, guardas, prólogo, código generado) con la GPU
        inactiva, en el paso mediano{ $profiler ->
            [yes] {" "}(puede ser coste del propio profiler)
           *[no] {""}
        }
  }
wrapper-call = { $host_us } { $between_ops ->
        [yes] de tiempo de host entre sus ops
       *[no] de tiempo de host en el envoltorio
    }{ $has_lookup ->
        [yes] {" "}(incl. { $lookup_us } de búsqueda en caché)
       *[no] {""}
    }, { $exposed_us } con la GPU inactiva, para { $gpu_us } de trabajo de GPU lanzado
guard-check = comprobación de guardas antes de la llamada: { $lookup_us }
