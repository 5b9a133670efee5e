## launch-bound: en español
title = Muchos kernels diminutos: la GPU espera mientras el host los despacha y los lanza

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Cada paso lanza muchos kernels diminutos y lanzar uno cuesta más tiempo de host que ejecutarlo: el
    kernel mediano dura unos pocos µs o menos, mientras que la llamada de lanzamiento (cudaLaunchKernel,
    cuLaunchKernelEx) tarda lo mismo o más, y la operación que lo despachó más todavía. La regla nombra
    los kernels y las operaciones que los lanzan, y la GPU inactiva mientras el host los despacha.

    Por qué:
    Un lanzamiento cuesta ~5-10 µs de host (Python, el dispatcher, el driver CUDA); una operación
    elemental sobre un tensor pequeño tarda 1 µs. Con cientos por paso, la GPU termina cada kernel antes
    de que llegue el siguiente y el paso dura la suma de los lanzamientos. Una GPU más rápida no ayuda;
    menos kernels y más grandes, sí.

    Ejemplo:
    gpu/launch_bound en una H200: 200 operaciones elementales diminutas (mul, add sobre 256 floats) por
    paso; 600 kernels en 3 pasos de 0.928 µs de mediana, frente a un cudaLaunchKernel mediano de 6.49 µs;
    188 µs de kernels por paso para 1.37 ms de llamadas de lanzamiento. La GPU espera 4.19 ms por paso a
    que se lancen, el 95% de la mediana de paso de 4.41 ms.

    Impacto:
    Por paso: la GPU inactiva justo antes de cada kernel diminuto, desde el final del trabajo anterior del
    dispositivo hasta el inicio del kernel (la GPU esperaba ese lanzamiento), sin contar la inactividad que
    reclama otro hallazgo (de una sincronización, de una región de carga de datos, de la compilación, del
    profiler): lo que fusionar esas operaciones en pocos kernels, o reproducirlas como CUDA graph,
    ahorraría como mucho (cota superior). Es la parte de la inactividad por operación que explican los
    kernels diminutos: `many-calls` y `overhead-bound` solo toman lo que queda, así que la misma
    inactividad nunca se cuenta dos veces (en gpu/launch_bound overhead-bound se queda 59 µs, el 1.3%, y
    many-calls nada). Antes la regla no tenía impacto y repetía el veredicto de overhead-bound y los
    aten::mul / aten::add de many-calls.

    Los kernels que reproduce un lanzamiento de graph (cudaGraphLaunch, hipGraphLaunch) no se lanzan uno
    a uno y quedan fuera; a un programa que ya reproduce graphs se le dice que fusione el resto o lo
    capture en esos graphs, no que capture el paso (issue 35: foreign/hta_negq_rank0, 14 lanzamientos de
    graph por paso, sus 135 kernels contados antes). Las cifras por paso son medias sobre los pasos,
    partes del paso medio (una parte media frente a la mediana de paso podía superarla).

    Solución:
    Fusiona las operaciones: torch.compile (Inductor fusiona cadenas elementales en un kernel Triton),
    optimizadores foreach/fusionados (`fused=True`), vectoriza sobre el lote en vez de iterar en Python;
    reproduce el paso entero como CUDA graph (`torch.compile(mode="reduce-overhead")`,
    `torch.cuda.CUDAGraph`) para que los lanzamientos cuesten uno solo. El código ya compilado necesita el
    CUDA graph (o más trabajo por llamada), no otro torch.compile.

example-item = { $count }x { $kernel }{ $has_op ->
    [yes] {" "}desde { $op }
   *[no] {""}
  }
ops = { $has_ops ->
    [yes] { $ops }
   *[no] las operaciones
  }
message = { $kernels } kernels en { $steps } paso(s) ({ $per_step } por paso), de mediana { $median_kernel_us } cada
    uno, mientras la llamada de lanzamiento mediana tarda { $median_launch_us }{ $has_op ->
        [yes] , la operación que los despacha { $median_op_us } de mediana
       *[no] {""}
    }; por paso, { $kernel_us } de kernels para { $launch_us } de llamadas de lanzamiento. La GPU espera { $idle_us }
    por paso (el { $share } { $has_steps ->
        [yes] del paso medio
       *[no] de la ventana
    } de { $whole_us }) a que se lancen los { $tiny } que duran { $tiny_max_us } o menos{ $compiled ->
        [yes] {" "}desde código compilado
       *[no] {""}
    }. Los más lanzados: { $examples }.
# donde las formas del paso cambian, la condición del CUDA graph (el texto en Python de overhead-bound la dice también)
static-first = { $new_shape ->
    [yes] {" "}Las formas cambian en cada paso ({ $new_shape_op }: { $new_shape_calls } llamadas por paso con una forma
        que ningún otro paso de la ventana tiene): un CUDA graph reproduce formas fijas, así que hazlas estáticas
        primero (una caché KV estática preasignada donde una secuencia crece, longitudes rellenadas o por tramos), o
        torch.compile recompila y graba un grafo por forma.
   *[no] {""}
  }
advice = { $graphed ->
    [yes] El paso ya reproduce CUDA graphs ({ $graph_launches } lanzamiento(s) de graph por paso); estos kernels se
        lanzan uno a uno fuera de ellos: fusiona las operaciones pequeñas ({ ops }) con torch.compile, o captúralas en
        los graphs con el resto, para que sus lanzamientos vayan en una reproducción.{ static-first }
   *[no] { $compiled ->
        [yes] Estos kernels diminutos vienen de código ya compilado: captura el paso como CUDA graph
            (torch.compile(mode='reduce-overhead')) para que sus lanzamientos cuesten uno solo, o da más trabajo a
            cada kernel (un lote mayor).{ static-first }
       *[no] Fusiona las operaciones pequeñas ({ ops }): torch.compile fusiona cadenas elementales en un solo kernel;
            convierte el bucle de Python sobre trozos en operaciones de tensores sobre el lote entero; o captura el
            paso como CUDA graph (torch.compile(mode='reduce-overhead')) para que los lanzamientos cuesten uno
            solo.{ static-first }
    }
  }
fix = { $tiny } kernels diminutos por paso ({ ops }) esperan a que el host los despache y lance, { $idle_us } de GPU
    inactiva por paso{ $graphed ->
        [yes] , fuera de los CUDA graphs que el paso reproduce: fusiónalos o captúralos en esos graphs
       *[no] { $compiled ->
            [yes] : captura el paso compilado como CUDA graph (mode='reduce-overhead')
           *[no] : fusiónalos con torch.compile o captura el paso como CUDA graph{ $new_shape ->
                [yes] {" "}cuando sus formas sean estáticas ({ $new_shape_op } cambia de forma en cada paso)
               *[no] {""}
            }
        }
    }
basis = GPU inactiva justo antes de cada kernel diminuto, desde el final del trabajo anterior hasta su inicio, por
    paso, sin la inactividad que reclaman otros hallazgos (sincronizaciones, carga de datos, compilación); cota
    superior
tiny-kernel = { $count } lanzamientos de este kernel en los pasos ({ $per_step } por paso)
its-launch = su llamada de lanzamiento: { $launch_us } para lanzar un kernel de { $kernel_us }
its-op = la operación que lo despachó: { $op_us }
