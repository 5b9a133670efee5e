## profiler-overhead: en español
title = La sobrecarga del profiler infla las operaciones donde cae

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El trabajo propio del profiler ("Activity Buffer Request", "Buffer Flush": CUPTI reservando y vaciando
    sus búferes de actividad) dibujado en la línea de sobrecarga de pid -1, y las operaciones donde cae.

    Por qué:
    Ese tiempo se gasta en el hilo perfilado mientras corre una operación: el tiempo de pared de la operación
    (CPU total) y de cada región por encima crece en esa cantidad, y la GPU espera, aunque el programa sin el
    profiler no lo pagaría. torch anida el evento bajo la operación, así que el Self CPU queda bien, pero no
    el ancho de los pasos, los totales de CPU ni los huecos de la GPU. Sin pasos de calentamiento en el
    schedule, la primera petición de búfer cae en la primera operación perfilada.

    Ejemplo:
    `gpu/profiler_first_step` (el forward de un MLP de 32 capas, ya calentado, perfilado con
    `schedule(wait=0, warmup=0, active=3)`): una Activity Buffer Request de 2.600 ms dentro del primer
    aten::addmm del paso 0, el 90% de los 2.890 ms de esa operación; el paso 0 dura 6.9 ms frente a 3.8 ms
    los demás. `gpu/window_sync_warm` (una llamada, sin schedule): 1.811 ms dentro de aten::mm, el 77% de la
    ventana.

    Impacto:
    Única vez: el tiempo de GPU inactiva durante los eventos del profiler, repartido entre los pasos de la
    ventana; el programa sin el profiler no lo paga, y los pasos de calentamiento de un schedule lo sacan de
    la ventana. gpu/profiler_first_step: 2.6 ms en 3 pasos, 867 µs por paso frente a un paso mediano de
    3.8 ms (crítico); gpu/window_sync_warm 1.8 ms, el 77% de su ventana; seed_mm4096_compile_cold 2.9 ms, el
    58%. Los eventos dentro de un primer paso frío o de una ventana muerta son de esos hallazgos
    (seed_mm64_cold, gpu/window_sync_cold), y una petición que cuesta menos del 1% del paso es ruido: los
    3.1 ms de big_gpt_eager_20steps en 20 pasos son el 0.3% de su paso de 52.7 ms (antes, un hallazgo info).

    Una ventana que no registró ninguna operación, región ni trabajo del dispositivo (a lo sumo unas
    llamadas al runtime) no contiene nada que el profiler infle: flowmatch_pytorch_trace (ajena: 0
    operaciones, ningún kernel) se leía antes como un 8.4% de sobrecarga del profiler dentro de un
    cudaDeviceSynchronize ocioso (issue 35).

    Solución:
    Nada que cambiar en el programa: perfila con `schedule(wait=1, warmup=1, active=N)` (los búferes se
    piden en los pasos de calentamiento), perfila más pasos para que una petición pese menos, y descuenta ese
    tiempo del total de CPU de las operaciones nombradas.

schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $steps })
where = { $in_steps ->
    [one] {" "}en el paso { $step_list }
    [many] {" "}en los pasos { $step_list }
   *[none] {""}
  }
op-item = { $us } dentro de { $name } (el { $percent }% de { $several ->
        [no] sus { $op_us }
       *[other] los { $op_us } de sus { $calls } llamadas
    })
outside-item = { $us } fuera de cualquier op
message = { $events } evento(s) de sobrecarga del profiler ({ $names }){ where }, { $total_us } en total, el
    { $window_percent }% de la ventana, { $idle_us } de ello con la GPU inactiva: { $parts }. Sin el profiler, el
    programa no lo paga.
advice = Nada que cambiar en el programa: perfila con { schedule } para que el profiler prepare sus búferes en
    los pasos de calentamiento, perfila más pasos para que una petición pese menos, y descuéntalo{ $has_ops ->
        [yes] {" "}del total de CPU de { $op } y
       *[no] {""}
    } del ancho de su paso.
fix = La { $first_name } del propio profiler tarda { $total_us }{ $has_ops ->
        [yes] {" "}dentro de { $op }
       *[no] {""}
    }{ where }: perfila con { schedule } para que caiga en los pasos de calentamiento.
basis = única vez: la GPU inactiva durante los eventos propios del profiler; sin el profiler, el programa no lo paga
inside-op = dentro de { $op }, el { $percent }% de su tiempo de pared{ $has_together ->
        [yes] ; todos ellos ahí: { $together }%
       *[no] {""}
    }
outside-ops = fuera de cualquier op, { $us }
