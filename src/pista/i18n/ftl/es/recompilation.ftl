## recompilation: en español
title = torch.compile compila dentro de la ventana perfilada o se acerca a su límite de recompilaciones
severity-exception = al menos aviso cerca del límite de recompilaciones: pasado este, el frame se ejecuta en modo eager

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    torch.compile compila dentro de la ventana perfilada: tramos de compilación de Dynamo/Inductor
    (`dynamo`, `entire_frame_compile`, `_compile.compile_inner (dynamo_timed)`,
    `OutputGraph.call_user_compiler`, `CompileTime`, autoajuste...) dentro de los pasos, o un mismo frame
    con varios ids de compilación (`Torch-Compiled Region: 0/1`, `0/2`, ...: el número tras la barra cuenta
    las recompilaciones), cada uno con su propio grafo (`## Call CompiledFxGraph <hash>` con un hash nuevo).
    Distingue un calentamiento (la primera compilación de un frame, una vez) de las recompilaciones del
    régimen estable, y avisa cuando un frame se acerca al límite de recompilaciones.

    Por qué:
    Una compilación cuesta de cientos de ms a segundos de host, mientras la GPU espera. Compilar una vez
    al arrancar es el trato que ofrece torch.compile; volver a compilar en régimen estable significa que
    falló una guarda: una forma de entrada nueva (sin formas dinámicas), un dtype o dispositivo nuevo, una
    constante o global de Python que cambió, una instancia nueva del módulo. Cada recompilación añade
    además una entrada que las guardas comprueban en cada llamada, y pasado
    `torch._dynamo.config.recompile_limit` (8) Dynamo se rinde y ejecuta el frame en eager.

    Ejemplo:
    gpu/recompile en una H200: `torch.compile(fn, dynamic=False)` de `relu(x @ w) + 1` llamado con un
    tamaño cuadrado nuevo en cada paso (96, 128, 160 en los pasos perfilados): ids 0/1, 0/2, 0/3, una
    compilación por paso (`dynamo` 220-231 ms cada una) más el autoajuste de Inductor en la primera
    llamada de cada grafo nuevo (60-68 ms): 865 ms de los 896 ms de pasos.

    Impacto:
    El tiempo de compilación (los tramos de compilación de nivel superior, autoajuste incluido) durante
    el que la GPU no ejecutaba trabajo del usuario, por paso. Las recompilaciones del régimen estable
    (compilaciones en dos o más pasos) cuestan eso cada vez: gpu/recompile 288 ms por paso, el 96%
    (critical), y el frame 0 ya tiene 4 de sus 8 entradas, una más por paso. Un calentamiento (las
    primeras compilaciones de sus frames, en un solo paso) o una recompilación suelta se reparten entre
    los pasos de la ventana y su base dice "una sola vez": se arreglan calentando antes de perfilar. Un
    frame con la mitad del límite o más (`Torch-Compiled Region: F/R` con R+1 >= 4) se avisa aunque no
    compile nada en la ventana, como warning como mínimo: pasado el límite el frame corre en eager.
    Antes era siempre warning a partir de 1 ms de compilación.

    Solución:
    Averigua qué cambia con `TORCH_LOGS="recompiles"` (o `torch._dynamo.explain`); marca como dinámicas
    las dimensiones que varían (`torch._dynamo.mark_dynamic(x, 0)`, `dynamic=True`) o rellena/agrupa las
    formas en pocos tamaños; saca del grafo compilado los escalares de Python que cambian (pásalos como
    tensores); calienta cada forma antes de perfilar o medir.

id-item = frame { $frame }: { $ids }
frame-item = el frame { $frame } ({ $ids })
held-item = el frame { $frame } tiene { $entries }
steps = { $steps_hit ->
    [none] la ventana
    [one] el paso { $step_list }
   *[many] los pasos { $step_list }
  }
what = { $compiles } compilación(es){ $has_autotunes ->
    [yes] {" "}y { $autotunes } autoajuste(s)
   *[no] {""}
  }
cost = { what } en { steps }: { $compile_us } de host, { $exposed_us } de ellos con la GPU inactiva, el { $share }%
    { $kind ->
        [steady] del tiempo del paso
       *[other] de la ventana
    }
frames = { $has_frames ->
    [yes] { $frame_list }
   *[no] torch.compile
  }
guard-fix = { $has_shapes ->
    [yes] marca como dinámicas las dimensiones que varían (torch._dynamo.mark_dynamic(x, dim) o
        torch.compile(dynamic=True)) o rellena/agrupa las entradas en pocas formas
   *[no] mantén fijo lo que comprueba la guarda que falla (pasa los escalares de Python que cambian como tensores,
        reutiliza una misma instancia del módulo, conserva dtypes y dispositivos)
  }
near-limit-text = { $near ->
    [yes] {" "}Cerca del límite de recompilaciones: { $held } de las { $limit } entradas compiladas que permite
        torch._dynamo.config.recompile_limit (cache_size_limit antes de torch 2.7); pasado el límite Dynamo deja de
        compilar el frame y lo ejecuta en eager.{ $has_rate ->
            [yes] {" "}A { $rate } recompilación(es) por paso, el frame { $rate_frame } lo alcanza en unos
                { $rate_steps } paso(s) más.
           *[no] {""}
        }
   *[no] {""}
  }
message = { $kind ->
        [steady] torch.compile recompila en régimen estable, { cost }: una guarda falla una y otra vez, así que el
            coste vuelve cada vez.
        [warmup] La primera compilación de torch.compile cae dentro de la ventana, { cost }: un calentamiento único,
            no un coste del régimen estable.
        [near-limit] No se compila nada dentro de la ventana, pero las regiones compiladas muestran cuántas veces
            recompilaron sus frames.
       *[once] torch.compile recompiló una vez dentro de la ventana, { cost }: único aquí, pero vuelve cada vez que
            la misma guarda falle.
    }{ $has_frames ->
        [yes] {" "}Ids de compilación vistos: { $ids }.
       *[no] {""}
    }{ $many_graphs ->
        [yes] {" "}Se llaman { $graphs } grafos compilados distintos (hashes de ## Call CompiledFxGraph).
       *[no] {""}
    }{ $has_shapes ->
        [yes] {" "}Formas de entrada por llamada: { $shapes }.
       *[no] {""}
    }{ near-limit-text }
raising = { $near ->
    [yes] {" "}Subir recompile_limit solo aplaza la vuelta a eager: arregla la guarda.
   *[no] {""}
  }
advice = { $kind ->
    [warmup] Calienta antes de perfilar o medir: ejecuta el paso compilado unas cuantas veces antes, o perfila con
        torch.profiler.schedule(wait=1, warmup=1, active=N); no hay nada que cambiar en el modelo.
    [steady] { $has_shapes ->
            [yes] Las formas de entrada cambian entre llamadas:
           *[no] Una guarda falla llamada tras llamada:
        } { guard-fix }. TORCH_LOGS='recompiles' nombra la guarda que falló.{ raising }
    [near-limit] Averigua qué recompila con TORCH_LOGS='recompiles' y { guard-fix }.{ raising }
   *[once] Calienta cada forma de entrada antes de perfilar; si esta se repite en el entrenamiento, { guard-fix }.
        TORCH_LOGS='recompiles' nombra la guarda que falló.{ raising }
  }
fix = { $kind ->
    [steady] { frames } recompila en { steps } ({ $has_shapes ->
            [yes] formas de entrada nuevas
           *[no] una guarda falla
        }), { $step_exposed_us } por paso: { guard-fix }.
    [warmup] { frames } compila por primera vez dentro de la ventana ({ $exposed_us }, una sola vez): calienta
        antes de perfilar.
    [near-limit] { frames } se acerca al límite de recompilaciones ({ $limit }): { guard-fix }.
   *[once] { frames } recompila una vez dentro de la ventana ({ $exposed_us }, una sola vez): calienta cada forma
        antes de perfilar.
  }
basis = { $kind ->
    [steady] tiempo de compilación con la GPU inactiva, por paso: se repite cada vez que falla una guarda
    [near-limit] ninguna compilación dentro de la ventana; el aviso es por el límite de recompilaciones
   *[once] una sola vez: el tiempo de compilación con la GPU inactiva, en toda la ventana (calienta antes de
        perfilar)
  }
compile-span = { $autotune ->
        [yes] autoajuste
       *[no] compilación
    }{ $has_id ->
        [yes] {" "}{ $compile_id }
       *[no] {""}
    }: { $dur_us }
region-call = llamada a la región compilada: frame { $frame }, compilación { $frame }/{ $count }
