## many-calls: en español
title = Operaciones llamadas muchísimas veces por paso: su coste por llamada se acumula

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Operaciones (o kernels) llamadas muchísimas veces por paso, cada llamada barata y sobre todo trabajo
    de host, que juntas hacen esperar a la GPU: el problema es la cantidad. Todas las de una traza son un
    solo hallazgo, cada una con sus llamadas por paso, de dónde vienen (un bucle de Python, el
    optimizador, conversiones de tipo, código compilado) y la GPU inactiva mientras el host está dentro.

    Por qué:
    Cada llamada paga el mismo peaje fijo: Python y el dispatcher en una operación (10-20 µs), un
    lanzamiento en un kernel (5-10 µs de host, unos µs de arranque en la GPU). Cien llamadas pequeñas
    pagan cien peajes; una llamada agrupada o fusionada paga uno. El peaje solo cuesta tiempo donde la GPU
    lo espera: detrás de kernels largos queda oculto. Una operación cuyo tiempo son los elementos que crea o
    mueve (números aleatorios, rellenos, copias) a 200 µs o más por llamada es ese trabajo, no un peaje, y se
    deja fuera: una llamada agrupada tarda lo mismo (monisha_trace: 100 aten::randn de 2.9 ms cada una en la
    CPU, a las que antes se decía "agrupa las llamadas").

    Ejemplo:
    big_gpt_eager_20steps (un GPT de 12 capas, autocast bf16, eager) en una H200: aten::to se llama 271
    veces por paso (32.8 µs cada una, las conversiones de autocast de los pesos fp32) y la GPU está
    inactiva 7.3 ms por paso mientras el host está dentro de ellas. En gpu/launch_bound (200 operaciones
    elementales diminutas por paso) las operaciones son aten::mul y aten::add, 100 llamadas cada una por
    paso; su inactividad es de launch-bound (la explican los kernels diminutos), así que esta regla calla
    ahí.

    Impacto:
    Por paso: la GPU inactiva mientras el host está dentro de las llamadas de las operaciones listadas
    (para kernels: dentro de sus llamadas de lanzamiento), sin contar la que reclama otro hallazgo
    (sincronizaciones, carga de datos, compilación, profiler, las operaciones de kernels diminutos de
    launch-bound): lo que agruparlas o fusionarlas ahorraría como mucho (cota superior; la llamada
    agrupada sigue costando una). El tiempo de host oculto tras trabajo de GPU no ahorra nada y no cuenta.
    Sin GPU cuenta el propio tiempo de host de las llamadas. Antes cada operación era su propio aviso, con
    su tiempo total como coste, oculto o no, y repetía overhead-bound.

    La fila de un kernel (o una copia) da por separado sus llamadas de lanzamiento y su tiempo de GPU, y
    su coste cuenta una sola vez la llamada de una copia bloqueante y la copia (issue 35: las llamadas de
    CPU de las copias sumadas a su tiempo de GPU, 181.7 ms donde la GPU corrió 82.7 ms). Las cifras por
    paso son partes del paso medio.

    Solución:
    Agrupa el trabajo (una operación sobre un tensor apilado en vez de un bucle de operaciones sobre
    trozos), usa las variantes `torch._foreach_*` / los optimizadores fusionados (`fused=True`), mantén los
    pesos en el tipo de cómputo para que autocast no los convierta en cada paso, fusiona con torch.compile
    o reproduce el paso entero como CUDA graph para que el coste por llamada desaparezca (código ya
    compilado: el CUDA graph).

step-word = { $step ->
    [step] paso
   *[window] ventana
  }
source = { $source ->
    [loop] un bucle de llamadas
    [optimizer] en el paso del optimizador
    [cast] conversiones de tipo
   *[compiled] en código compilado
  }
hidden = { $has_gpu ->
    [yes] { $idle_us } de ellos con la GPU inactiva
   *[no] { $idle_us } de tiempo de host
  }
call-item = { $kind ->
    [kernel] kernel { $name } { $per_step } veces por { step-word } ({ source }): { $launch_us } de llamadas de
        lanzamiento y { $gpu_us } en la GPU por { step-word }, { hidden }
   *[op] operación { $name } { $per_step } veces por { step-word } ({ source }), { $avg_us } cada una, { $cost_us }
        por { step-word }, { hidden }
  }
message = { $count } operación(es) llamadas muchísimas veces por { step-word }: { $calls }. En total { $has_gpu ->
        [yes] la GPU espera mientras el host está dentro de ellas
       *[no] el host pasa en ellas
    }: { $idle_us } por { step-word }, el { $share } de { $step ->
        [step] el paso medio de { $whole_us }.
       *[window] la ventana de { $whole_us }.
    }
advice-item = { $source ->
    [loop] Agrupa el bucle: una operación sobre un tensor apilado (torch.stack, torch._foreach_*) en vez de una
        llamada por trozo, o aplica torch.compile al bucle para que las llamadas se fusionen.
    [optimizer] Pasa fused=True al optimizador (Adam, AdamW, SGD): su actualización pasa a ser un kernel por
        grupo.
    [cast] Son conversiones de tipo en cada paso (autocast convirtiendo pesos fp32): mantén los pesos en el tipo
        de cómputo (model.to(torch.bfloat16)) o aplica torch.compile al paso para que se fusionen.
   *[compiled] Se ejecutan dentro de código compilado: captúralo como CUDA graph
        (torch.compile(mode='reduce-overhead')).
  }
advice = { $advices }{ $graph ->
    [yes] {" "}Un CUDA graph del paso entero también paga una sola vez el coste por llamada.
   *[no] {""}
  }
action = { $source ->
    [loop] agrupa las llamadas en una operación sobre tensores apilados o aplica torch.compile al bucle
    [optimizer] pasa fused=True al optimizador
    [cast] mantén los pesos en bf16 o aplica torch.compile al paso
   *[compiled] captura el paso como CUDA graph (mode='reduce-overhead')
  }
fix = { $name } se llama { $per_step } veces por { step-word } ({ source }), { $has_gpu ->
        [yes] { $call_idle_us } de GPU inactiva
       *[no] { $call_idle_us } de tiempo de host
    } por { step-word }: { action }
basis = { $has_gpu ->
    [yes] GPU inactiva mientras el host está dentro de las llamadas listadas, por paso, sin la inactividad que
        reclaman otros hallazgos (sincronizaciones, carga de datos, compilación, lanzamientos de kernels
        diminutos); cota superior: una llamada agrupada sigue costando una llamada
   *[no] tiempo de host de las llamadas listadas, por paso (no hay GPU tras la que ocultarlo); cota superior
  }
one-of-many = una de { $per_step } llamadas { $steps ->
    [yes] por paso
   *[no] en la ventana
  }
