# El texto del motor (pista.engine): cómo se estimó un impacto reproducido. Argumentos: args/_engine.py.

replay-basis = reproducción de los pasos perfilados con el arreglo aplicado ({ $what }){ $alone ->
        [more] {" "}({ $alone_us } por sí solo, perfilado; parte se atribuye a los arreglos ordenados antes)
        [less] {" "}({ $alone_us } por sí solo, perfilado; más una vez hechos los arreglos ordenados antes)
       *[same] {""}
    }{ $unprofiled ->
        [yes] ; la cifra sin el profiler es la que lo ordena
       *[no] {""}
    }
# lo que cambió la reproducción: los elementos, unidos con "; "
removed-item = { $count } evento(s) quitados (operaciones con lo que lanzaron, o kernels y copias)
scaled-host-item = el tiempo del host bajo { $count } evento(s) acortado
resized-work-item = { $count } kernel(s) o copias redimensionados
unblocked-item = { $count } espera(s) quitadas
readied-item = { $count } kernel(s) o copias ejecutados al lanzarse, sin la espera que la traza muestra antes
no-change = ningún cambio
