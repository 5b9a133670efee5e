## cpu-tensor-creation: en español
title = Los tensores se crean en la CPU dentro del paso y luego se copian a la GPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Tensores creados en la CPU dentro del paso y copiados después a la GPU: entradas aleatorias
    (`torch.randn(forma)` y luego `.to("cuda")` o `.cuda()`), constantes o tensores de índices (`torch.zeros`,
    `torch.arange`) construidos en el host en cada paso. En la traza: una op de creación (aten::randn, rand,
    randint, normal_, uniform_, zeros, ones, full, arange...) bajo la que no se lanza ningún kernel y que ocupa
    tiempo de host, seguida en el mismo hilo de una op de copia (aten::to, aten::_to_copy, aten::copy_) con una
    llamada memcpy del runtime debajo.

    Por qué:
    En la CPU la op llena el tensor en un núcleo (el muestreador normal de torch en CPU: unos cientos de MB/s), y
    luego una copia desde memoria paginable lo mueve a velocidad de PCIe con el host bloqueado; la GPU espera
    durante ambas. Creado en la GPU, el mismo tensor es un kernel de microsegundos y ninguna copia.

    Ejemplo:
    foreign/solangii_default (un benchmark público, sin los registros de la GPU): 10 `torch.randn` de 363 ms cada
    uno en la CPU (aten::normal_, 3,63 s de los 4,87 s de la ventana), cada uno seguido de `.to("cuda")`, cuyo
    cudaMemcpyAsync retiene el host 86 ms; el trabajo del modelo bajo ellos es un cuadrado y una suma.

    Impacto:
    Por paso: el tiempo de host de las ops de creación y de sus copias (la edición quita ambos del paso
    reproducido: el tensor creado en la GPU cuesta un kernel de microsegundos, no contado).

    Solución:
    Pasa el dispositivo a la op que crea el tensor: `torch.randn(forma, device="cuda")` (todas aceptan
    `device=`), o construye los tensores constantes una vez antes del bucle. Los datos que deben venir del host
    (un dataset) van en los workers del DataLoader con `pin_memory=True` y `.to(device, non_blocking=True)`.

message = { $calls } llamada(s) a { $ops } corren en la CPU (no lanzan ningún kernel) y sus tensores se copian
    después a la GPU: { $create_us } de tiempo de host { $per_step ->
        [yes] por paso
       *[no] en la ventana
    } creándolos y { $copy_us } copiándolos, con la GPU esperando.
advice = Crea los tensores en la GPU: pasa device='cuda' a la función que los crea (torch.randn(forma,
    device='cuda'); todas aceptan device=), o construye los tensores constantes una vez antes del bucle. Los datos
    que deben venir del host van en los workers del DataLoader con pin_memory=True y .to(device,
    non_blocking=True).
fix = { $ops } crean tensores en la CPU y luego los copian a la GPU ({ $total_us }): pasa device='cuda' a la función
    que los crea.
basis = el tiempo de host de esas llamadas y de sus copias, quitado del paso reproducido (creado en la GPU, el
    tensor es un kernel de microsegundos, no contado)
made-on-cpu = creado en la CPU en { $dur_us }, sin lanzar ningún kernel
copied-to-gpu = su copia a la GPU: { $dur_us } de tiempo de host
