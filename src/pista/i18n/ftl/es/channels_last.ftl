## channels-last: en español
title = Una red convolucional corre en NCHW: cuDNN transpone alrededor de cada convolución

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Una red convolucional que corre en el formato de memoria NCHW por defecto de PyTorch en una GPU cuyas
    convoluciones con tensor cores quieren NHWC: cuDNN convierte la entrada y la salida de cada
    convolución (`nchwToNhwcKernel`, `nhwcToNchwKernel`), y las capas alrededor de las convoluciones usan
    sus kernels NCHW, varias veces más lentos que los channels_last: batch norm
    (`batch_norm_collect_statistics_kernel`, `batch_norm_backward_kernel`, `bn_fw_tr_1C11_kernel_NCHW` de
    cuDNN...), pooling (`max_pool_*_nchw`) y convoluciones depthwise (`conv_depthwise2d_*`, kernels NCHW
    propios de PyTorch).

    Por qué:
    Los tensor cores leen juntos los canales de un píxel; un tensor NCHW los tiene a un plano de
    distancia, así que cuDNN transpone alrededor de cada convolución, hacia delante y hacia atrás, y los
    kernels de normalización recorren los planos a saltos. `model.to(memory_format=torch.channels_last)` y
    lo mismo para la entrada mantienen las activaciones en NHWC de principio a fin: desaparecen las
    transposiciones y los kernels por canal leen memoria contigua.

    Ejemplo:
    Los gemelos de la H200 gpu/layout_r50_nchw_bf16 y gpu/layout_r50_cl_bf16 (entrenamiento de
    ResNet-50 de torchvision, lote 64 a 224², autocast bf16, datos sintéticos en la GPU): NCHW gasta
    3.3 ms por paso en las transposiciones de cuDNN y 14.4 ms en kernels de batch norm, channels_last nada
    y 6.4 ms; el tiempo de GPU por paso baja de 27.5 a 15.2 ms. Sin profiler (mediana de 30 pasos): 31.5 ->
    24.8 ms en bf16, 33.0 -> 26.2 ms en fp32; MobileNetV3-Large (lote 128) 52.1 -> 33.4 ms en bf16, sus
    convoluciones depthwise y batch norm 42.7 ms de GPU por paso en NCHW (gpu/layout_mb_nchw_bf16) frente a
    unos 10 ms.

    Impacto:
    Por paso: el tiempo de las transposiciones, más el de cada kernel del camino NCHW por lo que
    channels_last no conserva de él (los gemelos: batch norm conserva 0.44 de su tiempo, las convoluciones
    depthwise 0.30, el pooling 0.86), por la fracción de la ventana en que la GPU está ocupada (el tiempo
    de GPU ahorrado acorta solo en parte un paso limitado por el host). gpu/layout_r50_nchw_bf16: 11.5 ms
    de GPU (los gemelos difieren en 12.3), 57% ocupada (perfilado con record_shapes), 6.6 ms del paso
    perfilado de 49.5 ms (13%; sin profiler el paso ahorra 6.7 ms, 21%); gpu/layout_r50_nchw_fp32:
    9.6 ms, 81% ocupada, 7.7 ms de 36.7 (21%; sin profiler el paso fp32 ahorra 6.8 ms, 21%);
    gpu/layout_mb_nchw_bf16 26.4 ms de GPU (los gemelos difieren en 33.6), 87% ocupada, 23.1 ms del paso
    de 52.4 ms (44%; sin profiler 18.7 ms, 36%). Un modelo channels_last alimentado con una entrada NCHW convierte una vez por
    paso (gpu/multiscale_plain: 20 µs): por debajo del 1% del paso la regla calla.

    Solución:
    `model = model.to(memory_format=torch.channels_last)` una vez, y
    `x = x.to(memory_format=torch.channels_last)` en cada lote (o en el collate del DataLoader); con
    torch.compile, lo mismo. Las capas que no admiten channels_last vuelven a NCHW por sí solas, así que el
    cambio es seguro de probar.

# the NCHW kernels' kinds (pista.rules.channels_last.KINDS)
kind-name = { $kind_key ->
    [transpose] transposiciones
    [depthwise-conv] convoluciones depthwise
   *[other] { $kind }
  }
message = Las convoluciones (el { $conv_share }% del tiempo de GPU) corren sobre tensores NCHW, y el camino NCHW
    cuesta { $kernel_us } de GPU por paso (el { $gpu_share }%): { $kinds }. En channels_last desaparecen las
    transposiciones y el resto usa kernels más rápidos: unos { $saved_us } menos de tiempo de GPU por paso.
kind-item = { kind-name } { $us } ({ $calls } kernels, p. ej. { $kernel })
advice = Pasa el modelo y su entrada a channels_last: model = model.to(memory_format=torch.channels_last) una
    vez, y x = x.to(memory_format=torch.channels_last) en cada lote (o en el collate del DataLoader). cuDNN
    ejecuta entonces las convoluciones directamente sobre tensores NHWC, y batch norm, pooling y las
    convoluciones depthwise usan sus kernels channels_last.
fix = El modelo corre en NCHW: cuDNN transpone alrededor de sus convoluciones y corren { $kernel_us } de
    kernels NCHW por paso: convierte el modelo y su entrada con .to(memory_format=torch.channels_last).
basis = el tiempo de las transposiciones más el de cada kernel NCHW por lo que channels_last no conserva de él
    (las proporciones de los gemelos en la H200) ({ $saved_us } de tiempo de GPU { $per ->
        [step] por paso
       *[window] en la ventana
    }), por el { $busy }% de la ventana en que la GPU está ocupada: el tiempo de GPU ahorrado acorta el paso
    solo donde la GPU es el límite
nchw-note = camino NCHW: { kind-name }
