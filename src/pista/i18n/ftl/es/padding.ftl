## padding: en español
title = Los lotes se rellenan hasta una longitud fija: el modelo trabaja sobre relleno
severity-exception = info donde la traza no puede mostrar las longitudes de los textos (los lotes llegan rellenos): se dice la condición y el ahorro se calcula con ASSUMED_RATIO

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Cada lote se rellena hasta una longitud fija (`padding="max_length"` de un tokenizador, un `F.pad` hasta
    `max_length`), así que el modelo trabaja sobre relleno. Dos casos, según lo que muestra la traza:
    - **visto**: una op del paso rellena un lote de ids de tokens, una máscara o embeddings a lo largo del eje de
      la secuencia (`aten::constant_pad_nd`, de `F.pad`, sobre un tensor entero o booleano `[lote, longitud]`, o
      uno `[lote, longitud, rasgos]`), de la fila más larga del lote `l` a `L`, y las ops del modelo trabajan
      después a `L`: la parte de relleno, `1 - l/L`, se lee de la traza.
    - **probable**: los lotes llegan rellenos (lo hizo el cargador), la atención recibe una máscara de relleno de
      claves (`[lote, 1, 1, L]`, `[lote, cabezas, 1, L]` o `[lote, 1, L, L]`) y la longitud `L` es la misma en
      todos los pasos. Las longitudes de los textos no están en la traza: el hallazgo dice lo que se vio y qué
      comprobar.
    Un modelo entrenado sobre fragmentos de longitud fija (el contexto de un GPT) no usa máscara de relleno y
    calla; un collate que rellena hasta la fila más larga de cada lote da una longitud nueva en cada paso y
    calla también.

    Por qué:
    El trabajo de un transformer crece con la longitud rellenada: las proyecciones y los MLP linealmente, la
    atención con su cuadrado. Textos de unas decenas de tokens rellenos hasta cientos gastan la mayor parte del
    paso en tokens de relleno que la máscara luego descarta.

    Ejemplo:
    savings/h100/pad_max_length_train: un clasificador nn.TransformerEncoder agrupa filas de 24-128 tokens con
    `pad_sequence` y después `F.pad` hasta 512: cada paso rellena [64, 126] hasta [64, 512]; rellenar hasta la
    fila más larga es un 44,7% más rápido sin el profiler. savings/h100/pad_loader_infer: un codificador tipo
    BERT recibe lotes que el cargador rellenó hasta 256 (textos de 16-100 tokens), con una máscara aditiva de
    {""}[64, 1, 1, 256] en el SDPA de cada capa; rellenar hasta la más larga es un 55,9% más rápido.

    Impacto:
    Visto: el paso reproducido con sus kernels a la longitud de la fila más larga del lote: cada kernel de una op
    que recorre el eje de la secuencia (un tensor `[lote, L, ...]`, `lote*L` filas, o `[lote, cabezas, L, ...]`)
    se reduce por `l/L`, los de atención (una op de atención, o un tensor `[..., L, L]`) por `(l/L)^2`; el
    despacho del host no cambia. Con torch.compile, la longitud objetivo se redondea a un múltiplo de 64.
    Probable: la misma edición con un `l/L` supuesto de ASSUMED_RATIO, en info y con la condición dicha.

    Solución:
    Rellena cada lote hasta su propia fila más larga: `padding="longest"` (o `DataCollatorWithPadding`) en vez
    de `padding="max_length"`, `pad_sequence` sin el `F.pad` adicional; con longitudes muy desiguales, agrupa
    los textos por longitud (`group_by_length=True` en el Trainer de Hugging Face) para que las filas de un lote
    se parezcan. Con torch.compile, marca la longitud como dinámica (`torch._dynamo.mark_dynamic(ids, 1)`) o
    rellena hasta un múltiplo de 64 para que pocas formas cubran todos los lotes.

target = { $compiled ->
    [yes] la longitud de la fila más larga del lote redondeada a un múltiplo de 64
   *[no] la longitud de la fila más larga del lote
  }
message = { $seen ->
    [yes] Cada paso rellena un lote de { $batch } filas cuya más larga tiene { $longest } tokens (media de los
        pasos) hasta { $length }, y el modelo trabaja después a { $length }: el { $padded }% de cada secuencia es
        relleno. Los kernels que recorren el eje de la secuencia ocupan { $kernels_us } de GPU por paso; a
        { target } ocuparían { $saved_us } menos.
   *[no] Todos los pasos trabajan a la misma longitud, { $length }, y la atención recibe una máscara de relleno:
        los lotes llegan rellenos hasta una longitud fija, y las longitudes de los textos no están en la traza. Los
        kernels que recorren el eje de la secuencia ocupan { $kernels_us } de GPU por paso; si el texto más largo
        de un lote es la mitad de { $length }, rellenar hasta él ahorra { $saved_us } de ese tiempo. Comprueba
        las longitudes: print(attention_mask.sum(1).max()) en unos cuantos lotes.
  }
advice = { $compiled ->
    [yes] El modelo está compilado, así que cada longitud nueva sería un grafo nuevo: rellena cada lote hasta el
        siguiente múltiplo de 64 por encima de su fila más larga (pocos grafos cubren todos los lotes), o marca
        la longitud como dinámica (torch._dynamo.mark_dynamic(ids, 1)) y rellena hasta la fila más larga.
   *[no] Rellena cada lote hasta su propia fila más larga: { $seen ->
            [yes] quita el relleno hasta max_length (el F.pad tras pad_sequence) y conserva el de pad_sequence,
                hasta la fila más larga
           *[no] usa padding='longest' (o DataCollatorWithPadding) en vez de padding='max_length'
        }. Con longitudes muy desiguales, agrupa textos de longitud parecida en cada lote (group_by_length=True
        en el Trainer de Hugging Face, o un sampler por cubetas). Con torch.compile, marca la longitud como
        dinámica (torch._dynamo.mark_dynamic(ids, 1)) o rellena hasta un múltiplo de 64, para que pocas formas
        cubran todos los lotes.
  }
fix = { $seen ->
    [yes] { $compiled ->
        [yes] cada lote se rellena de ~{ $longest } a { $length } tokens con torch.compile: rellena hasta el
            siguiente múltiplo de 64 (pocos grafos), o marca la longitud como dinámica
       *[no] cada lote se rellena de ~{ $longest } a { $length } tokens: rellena hasta la fila más larga del
            lote (quita el relleno hasta max_length)
    }
   *[no] cada lote llega relleno hasta { $length } con máscara de relleno: si los textos son más cortos, rellena
        hasta el más largo de cada lote (padding='longest')
  }
basis = { $seen ->
    [yes] { $compiled ->
        [yes] los kernels del eje de la secuencia del paso a la longitud de la fila más larga redondeada a un
            múltiplo de 64 (ops lineales por l/L, atención por (l/L)^2)
       *[no] los kernels del eje de la secuencia del paso a la longitud de la fila más larga (ops lineales por
            l/L, atención por (l/L)^2)
    }
   *[no] los kernels del eje de la secuencia del paso a una fila más larga supuesta del { $ratio }% de
        { $length } (ops lineales por l/L, atención por (l/L)^2): las longitudes no están en la traza
  }
pad-call = rellena { $rows } filas de { $longest } a { $padded_to }
masked-attention = atención con una máscara de relleno de { $mask }
