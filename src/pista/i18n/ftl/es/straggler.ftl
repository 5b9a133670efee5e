## straggler: en español
title = Rezagado: un rango hace esperar a los demás

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Un rango llega tarde a sus colectivas (all-reduce, all-gather, ...) o sus pasos duran más que los de
    los demás, y todos los otros rangos le esperan dentro de la colectiva. Solo se ve entre rangos:
    `pista analyze DIR` sobre una carpeta de trazas por rango.

    Por qué:
    Una colectiva termina cuando llega el último participante. Lo que los demás esperan aparece en sus
    trazas como comunicación larga y expuesta, y el trabajo entero va al ritmo del rango más lento: un
    rango lento de mil hace lentas mil GPUs.

    Ejemplo:
    Dos rangos gloo entrenando un MLP pequeño con DDP en la CPU, el rango 1 duerme 30 ms antes de cada
    forward: el rango 1 llega a cada all-reduce unos 30 ms después que el rango 0, y el rango 0 espera
    esos 30 ms por paso en `gloo:all_reduce` (tests/fixtures/gloo/straggler_2). La región del host en la
    que el rango 1 pasa más tiempo que los demás, `slow_input` (30.2 ms por paso, ausente en el rango 0),
    se nombra como la causa.

    Impacto:
    Por paso: cuánto más tarde que la mediana de los otros rangos llama el rezagado a sus colectivas (la
    mediana sobre las colectivas emparejadas de cada paso, promediada sobre los pasos): lo que los demás
    le esperan cada paso, que el trabajo ahorra cuando el rezagado va a su ritmo. Fracción del paso
    mediano del rezagado. Sin colectivas emparejadas, su paso mediano menos el de los demás. Esa espera
    es también comunicación expuesta de los demás: sobre una carpeta se descuenta de sus hallazgos
    exposed-communication, para contarla una sola vez. Antes, un aviso fijo. straggler_2: 31.9 ms de un
    paso de 38.4 ms (83%, crítico); straggler_4: 31.3 de 52.4 ms (60%, crítico).

    Solución:
    Mira qué hace el rango lento antes de sus colectivas que los demás no hacen: datos o longitudes de
    secuencia desiguales, carga de datos o sistema de ficheros lentos en ese host, logs o checkpoints en
    un solo rango, un dispositivo más lento o limitado, un vecino ruidoso. Equilibra el trabajo, saca del
    paso lo que solo hace un rango o sustituye el host lento.

message = { $cause ->
    [late] El rango { $rank } llega a sus colectivas { $late_us } después de la mediana de los otros { $others }
        rango(s) (mediana sobre { $matched } colectivas emparejadas; su paso mediano dura { $step_us }): le esperan
        { $wait_us } por paso.
   *[slow-steps] El paso mediano del rango { $rank } dura { $step_us } frente a { $others_step_us } en los otros
        { $others } rango(s), { $wait_us } más por paso.
  }{ $exposed ->
    [yes] {" "}Los demás esperan en comunicación { $peers_exposed_us } por paso (mediana); el rango { $rank }, solo
        { $own_exposed_us }.
   *[no] {""}
  }{ $extra ->
    [none] {""}
   *[other] {" "}El rango { $rank } pasa { $extra_us } por paso en { $extra_name }; { $alone ->
            [yes] los demás no la ejecutan
           *[no] los demás, { $extra_others_us }
        }.
  }
advice = { $extra ->
    [device] { $alone ->
            [yes] El rango { $rank } ejecuta { $extra_name } ({ $extra_us } por paso) y los demás no: ejecuta otros
                kernels, así que su configuración es distinta (dtype, TF32 o autocast, una versión de biblioteca):
                hazla igual en todos los rangos.
           *[no] { $extra_name } tarda { $extra_us } por paso en el rango { $rank } y { $extra_others_us } en los
                demás: sus entradas son mayores (fragmentos desiguales, secuencias más largas, relleno) o su GPU es
                más lenta (relojes, throttling); equilibra las entradas o revisa el dispositivo.
        }
    [host] { $extra_name } le cuesta al rango { $rank } { $extra_more_us } más por paso que a los demás: si lee o
        prepara la entrada, carga en workers del DataLoader (num_workers>0) o equilibra los fragmentos de datos; si
        registra, evalúa o guarda checkpoints solo en el rango { $rank }, hazlo fuera del paso o de forma asíncrona;
        si no, que cueste lo mismo que en los otros rangos.
   *[none] { $cause ->
            [late] Ninguna región del host del rango { $rank } explica su retraso: compara sus entradas (tamaño de
                los fragmentos, longitud de las secuencias) y su dispositivo (relojes, throttling, un vecino ruidoso)
                con los de los demás; equilibra el trabajo o saca del trabajo el host lento.
           *[slow-steps] El rango { $rank } hace sus pasos más despacio sin colectivas en las que esperar: compara
                su configuración (precisión, TF32, tamaño de lote), su dispositivo y sus entradas con los de los
                otros rangos y alinéalos.
        }
  }
fix = { $extra ->
    [device] el rango { $rank } pasa { $extra_more_us } más por paso en { $extra_name } que los demás rangos
        ({ $wait_us } por paso por detrás de ellos): dale la misma configuración y las mismas entradas que a ellos
    [host] el rango { $rank } pasa { $extra_more_us } más por paso en { $extra_name } que los demás rangos, que le
        esperan { $wait_us } por paso: saca ese trabajo del paso en el rango { $rank } o equilíbralo
   *[none] { $cause ->
            [late] los demás rangos esperan { $wait_us } por paso en sus colectivas al rango { $rank }: busca qué
                retrasa al rango { $rank } (entradas, dispositivo, host) y equilíbralo
           *[slow-steps] los pasos del rango { $rank } duran { $step_us } frente a { $others_step_us } en los
                demás: alinea su configuración, dispositivo y entradas con los de ellos
        }
  }
basis = { $cause ->
    [late] por paso, cuánto más tarde que la mediana de los otros rangos llama a sus colectivas (mediana sobre las
        colectivas del paso), promediado sobre los pasos: lo que los demás le esperan
   *[slow-steps] su paso mediano menos el paso mediano de los otros rangos: lo que ahorraría yendo a su ritmo
  }
late-call = { $late_us } de retraso (la n.º { $nth } con su nombre en el paso)
slow-step = { $more_us } más que el paso mediano de los otros rangos ({ $others_us })
