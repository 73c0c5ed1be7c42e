"""The example GPT's sizes (examples/gpt/model.c), for the benchmarks that
choose a shape before they run it."""

VOCAB = 256


def params(layers, dim, seq):
    """(every parameter, the matrix parameters the FLOP count uses): wte and
    lm_w (untied, vocab x dim), wpe (seq x dim), per block 12 dim^2 + 13 dim
    (qkv, attention projection, the MLP's two, their biases, two layer
    norms), the final layer norm."""
    block = 12 * dim * dim + 13 * dim
    total = 2 * VOCAB * dim + seq * dim + layers * block + 2 * dim
    matrix = layers * 12 * dim * dim + VOCAB * dim
    return total, matrix
