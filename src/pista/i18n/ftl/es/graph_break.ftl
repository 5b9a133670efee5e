## graph-break: en español
title = torch.compile rompe el grafo: cada llamada corre como varios grafos con Python entre ellos

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Una función compilada con torch.compile cuyo grafo rompe Dynamo: cada llamada corre como varios
    grafos compilados con Python entre ellos. En la traza, una llamada `Torch-Compiled Region: F/C` de
    primer nivel contiene las regiones de otros frames (las funciones de reanudación de Dynamo,
    compiladas desde la ruptura) y dos o más `## Call CompiledFxGraph`; lo que corre entre los grafos
    dice qué la rompió: `aten::is_nonzero` (un `if` de Python sobre un tensor), `aten::item` (un valor
    leído en Python: `.item()`, `float(t)`, `.tolist()`) o ningún op (Python que Dynamo no traza:
    `print`, una llamada a una biblioteca que no conoce).

    Por qué:
    Cada ruptura termina un grafo y empieza otro: una comprobación de guardas, una región y un envoltorio
    más por llamada; la fusión se corta en la ruptura, y leer un valor sincroniza el host con la GPU, así
    que la cola se vacía y la GPU espera mientras Python corre la función de reanudación y lanza el grafo
    siguiente. Los CUDA graphs (`mode="reduce-overhead"`) tampoco pueden cruzar una ruptura.

    Ejemplo:
    gpu/graph_break_two (CPU, un hilo, un bloque de 3 Linear de 256 con lote 16): `if h.abs().mean() > 10:`
    y `self.last = h.mean().item()` rompen el forward dos veces, tres grafos por llamada, 31 µs de host
    entre grafos por ruptura con el profiler; sin profiler 165.5 µs por llamada frente a 130.6 µs de su
    gemelo (torch.where, sin lectura; gpu/graph_break_whole, un grafo): 35 µs, el 27%. Una ruptura
    (graph_break_branch, graph_break_item): 17-19 µs de 132 µs.

    Impacto:
    Por paso, el tiempo entre los grafos de cada llamada rota (del final de un `## Call CompiledFxGraph`
    al inicio del siguiente): con GPU, la inactividad de la GPU en él (el vaciado por la sincronización y
    el Python de la reanudación); solo CPU, su tiempo de host dividido por la inflación del tiempo de
    host que causa el profiler (PROFILER_HOST_INFLATION: los 31 µs por ruptura de graph_break_two con
    profiler, 17.5 µs sin él). Una cota superior: el trabajo entre los grafos (la reducción de la propia
    rama) se queda. host-sync deja a esta regla las sincronizaciones en esos huecos. Calla por debajo
    del 1% del paso; los fixtures compilados sin ruptura (seed_mm4096_compile, capture_mlp_compile,
    series_mlp_compile, los que recompilan) no tienen ninguna región dentro de otra.

    Solución:
    Encuentra la ruptura con `TORCH_LOGS="graph_breaks"` (o `torch._dynamo.explain(fn)(*args)`);
    `torch.compile(fullgraph=True)` convierte cualquier ruptura en un error. Una rama sobre un tensor:
    `torch.where` o `torch.cond`; una lectura de valor: déjalo como tensor y léelo cada N pasos fuera de
    la función compilada (o `torch._dynamo.config.capture_scalar_outputs = True`); print y logging:
    sácalos de la función compilada.

breaks = { $once ->
    [yes] una vez
   *[no] { $breaks } veces
  }
cause-item = { $cause ->
    [branch] un if de Python sobre el valor de un tensor (aten::is_nonzero: bool(tensor))
    [read] el valor de un tensor leído en Python (aten::item: .item(), float(t), .tolist())
   *[python] Python que Dynamo no traza (no corre ningún op: print, logging, una llamada a otra biblioteca)
  }
cause-short = { $cause ->
    [branch] un if de Python sobre el valor de un tensor
    [read] el valor de un tensor leído en Python
   *[python] Python que Dynamo no traza
  }
fix-item = { $cause ->
    [branch] calcula ambas ramas y elige con torch.where (o torch.cond)
    [read] deja el valor como tensor y léelo cada N pasos fuera de la función compilada
   *[python] saca el print, el logging o la llamada ajena de la función compilada
  }
message = La función compilada (frame { $frame } de Dynamo) corre como { $graphs } grafos por llamada en sus
    { $calls } llamadas: Dynamo rompió su grafo { breaks } por llamada. Entre los grafos: { $causes }{ $has_ops ->
        [yes] {" "}({ $ops })
       *[no] {""}
    }. El host pasa { $gap_us } por paso entre los grafos{ $gpu ->
        [yes] , { $idle_us } de ellos con la GPU inactiva
       *[no] {""}
    }; cada ruptura además corta la fusión ahí, y los CUDA graphs no pueden cruzarla.
advice = Encuentra cada ruptura con TORCH_LOGS="graph_breaks" (o torch._dynamo.explain(fn)(*args)) y luego
    { $fixes }; para una lectura de valor, torch._dynamo.config.capture_scalar_outputs = True también la deja
    en el grafo. torch.compile(fullgraph=True) convierte cualquier ruptura en un error, así que no vuelve.
fix = torch.compile rompe el grafo { breaks } por llamada ({ cause-short }): encuéntrala con
    TORCH_LOGS="graph_breaks" y { fix-item }; fullgraph=True hace de una ruptura un error.
basis = { $gpu ->
    [yes] la GPU inactiva entre los grafos de cada llamada rota, por paso; una cota superior (el código entre
        ellos se queda)
   *[no] el tiempo del host entre los grafos de cada llamada rota, por paso, dividido por { $inflation } por la
        inflación del tiempo del host que causa el profiler; una cota superior (el código entre ellos se queda)
  }
call-note = una llamada compilada que corre como { $graphs } grafos
gap-note = el grafo siguiente, tras { $gap_us } de { $has_ops ->
    [yes] { $ops }
   *[no] solo Python
  }
