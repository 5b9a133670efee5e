## padding: the text of its findings, in English
title = Batches are padded to a fixed length: the model runs on padding
severity-exception = info where the trace cannot show the texts' lengths (the batches arrive padded): the condition is stated and the saving is computed at ASSUMED_RATIO

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Every batch is padded to a fixed length (a tokenizer's `padding="max_length"`, an `F.pad` to
    `max_length`), so the model runs on padding. Two cases, told apart by what the trace shows:
    - **seen**: an op in the step pads a batch of token ids, a mask or embeddings along the sequence axis
      (`aten::constant_pad_nd`, from `F.pad`, on a `[batch, length]` integer or boolean tensor, or a
      `[batch, length, features]` one), from the batch's longest row `l` to `L`, and the model's ops then
      run at `L`: the padding's share is `1 - l/L`, read from the trace.
    - **likely**: the batches arrive padded (the loader did it), attention gets a key padding mask
      (`[batch, 1, 1, L]`, `[batch, heads, 1, L]` or `[batch, 1, L, L]`), and the length `L` is the same in
      every step. The texts' lengths are not in the trace: the finding says what was seen and what to check.
    A model trained on fixed-length chunks (a GPT's context) uses no padding mask and stays quiet; a collate
    that pads to each batch's longest row gives a new length every step and stays quiet too.

    Why:
    A transformer's work grows with the padded length: the projections and MLPs linearly, attention with its
    square. Texts of a few dozen tokens padded to hundreds spend most of the step on pad tokens, which the
    mask then throws away.

    Example:
    savings/h100/pad_max_length_train: an nn.TransformerEncoder classifier collates rows of 24-128 tokens
    with `pad_sequence`, then `F.pad` to 512: each step pads [64, 126] to [64, 512]; padding to the longest
    row is 44.7% faster unprofiled. savings/h100/pad_loader_infer: a BERT-style encoder gets batches the loader
    padded to 256 (texts of 16-100 tokens), an additive mask of [64, 1, 1, 256] in every layer's SDPA; padding
    to the longest is 55.9% faster.

    Impact:
    Seen: the step replayed with its kernels at the batch's longest row: each kernel of an op that runs on
    the sequence axis (a `[batch, L, ...]` tensor, `batch*L` rows, or `[batch, heads, L, ...]`) shrinks by
    `l/L`, attention's (an attention op, or a `[..., L, L]` tensor) by `(l/L)^2`; the host's dispatch is
    unchanged. Under torch.compile the target length is rounded up to a multiple of COMPILED_PAD_MULTIPLE.
    Likely: the same edit at an assumed `l/L` of ASSUMED_RATIO, reported at info with the
    condition stated (SEVERITY_EXCEPTION).

    Fix:
    Pad each batch to its own longest row: `padding="longest"` (or `DataCollatorWithPadding`) instead of
    `padding="max_length"`, `pad_sequence` without the extra `F.pad`; with very uneven lengths, bucket the
    texts by length (`group_by_length=True` in Hugging Face's Trainer) so a batch's rows are alike. Under
    torch.compile, mark the length dynamic (`torch._dynamo.mark_dynamic(ids, 1)`) or pad to a multiple of
    64 so a few shapes cover every batch.

target = { $compiled ->
    [yes] the batch's longest row rounded up to a multiple of 64
   *[no] the batch's longest row
  }
message = { $seen ->
    [yes] Each step pads a batch of { $batch } rows whose longest is { $longest } tokens (mean over steps) to
        { $length }, and the model then runs at { $length }: { $padded }% of every sequence is padding. The kernels
        that run on the sequence axis take { $kernels_us } of GPU time per step; at { target } they take
        { $saved_us } less.
   *[no] Every step runs at the same length, { $length }, and attention takes a padding mask: the batches arrive
        padded to a fixed length, and the texts' lengths are not in the trace. The kernels that run on the
        sequence axis take { $kernels_us } of GPU time per step; if a batch's longest text is half of { $length },
        padding to it saves { $saved_us } of it. Check the lengths: print(attention_mask.sum(1).max()) for a few
        batches.
  }
advice = { $compiled ->
    [yes] The model is compiled, so each new length would be a new graph: pad each batch to the next multiple of
        64 above its longest row (a few graphs cover every batch), or mark the length dynamic
        (torch._dynamo.mark_dynamic(ids, 1)) and pad to the longest row.
   *[no] Pad each batch to its own longest row: { $seen ->
            [yes] drop the pad to max_length (F.pad after pad_sequence) and keep pad_sequence's batch-longest padding
           *[no] use padding='longest' (or DataCollatorWithPadding) instead of padding='max_length'
        }. With very uneven lengths, group texts of similar length into a batch (group_by_length=True in Hugging
        Face's Trainer, or a bucketing sampler). Under torch.compile, mark the length dynamic
        (torch._dynamo.mark_dynamic(ids, 1)) or pad to a multiple of 64, so a few shapes cover every batch.
  }
fix = { $seen ->
    [yes] { $compiled ->
        [yes] every batch is padded from ~{ $longest } to { $length } tokens under torch.compile: pad to the next
            multiple of 64 instead (a few graphs), or mark the length dynamic
       *[no] every batch is padded from ~{ $longest } to { $length } tokens: pad to the batch's longest row
            (drop the pad to max_length)
    }
   *[no] every batch arrives padded to { $length } with a padding mask: if the texts are shorter, pad to each
        batch's longest (padding='longest')
  }
basis = { $seen ->
    [yes] { $compiled ->
        [yes] the step's sequence-axis kernels at the batch's longest row rounded up to a multiple of 64 (linear
            ops by l/L, attention by (l/L)^2)
       *[no] the step's sequence-axis kernels at the batch's longest row (linear ops by l/L, attention by (l/L)^2)
    }
   *[no] the step's sequence-axis kernels at an assumed longest row of { $ratio }% of { $length } (linear ops by
        l/L, attention by (l/L)^2): the lengths are not in the trace
  }
pad-call = pads { $rows } rows of { $longest } to { $padded_to }
masked-attention = attention with a padding mask of { $mask }
