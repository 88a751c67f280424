"""The original ALBERT equations in NumPy (float64), written from the paper (Lan et al. 2020,
arXiv:1909.11942) and the original code (google-research/albert `modeling.py`)."""

import numpy as np


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    """Softmax over the last axis."""
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def dense(x, kernel, bias):
    return x @ kernel + bias


def attention_block(x, mask, heads, q, k, v, o, norm):
    """x [B,T,H], mask [B,T]; q, k, v, o are (kernel, bias); norm is (gamma, beta)."""
    batch, length, hidden = x.shape
    size = hidden // heads

    def split(t):
        return t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

    scores = split(dense(x, *q)) @ split(dense(x, *k)).transpose(0, 1, 3, 2) / np.sqrt(size)
    scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
    probs = softmax(scores)
    context = (probs @ split(dense(x, *v))).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
    return layer_norm(x + dense(context, *o), *norm)


def feed_forward_block(x, inner, outer, norm):
    return layer_norm(x + dense(gelu_tanh(dense(x, *inner)), *outer), *norm)


def dense_weights(layer):
    return layer.kernel.numpy().astype(np.float64), layer.bias.numpy().astype(np.float64)


def norm_weights(layer):
    return layer.gamma.numpy().astype(np.float64), layer.beta.numpy().astype(np.float64)
