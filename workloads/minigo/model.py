"""The MiniGo dual network (policy + value heads on a residual tower), as the v0.7 reference's
`dual_net.py` builds it (mlcommons/training, reinforcement/tensorflow/minigo/dual_net.py,
`model_inference_fn`):

    input   [N, N, 17] features: 8 history planes per colour + the colour to play
    stem    3x3 conv, `conv_width` filters, batch norm, relu
    trunk   `trunk_layers` residual blocks: 3x3 conv, BN, relu, 3x3 conv, BN, + input, relu
    policy  1x1 conv to 2 filters, BN (no offset, no scale), relu, dense -> N*N + 1 logits
            (the last: pass)
    value   1x1 conv to 1 filter, BN (no offset, no scale), relu, dense `fc_width`, relu,
            dense 1, tanh

Convolutions carry no bias (batch norm follows them); the stem's and trunk's batch norms have
an offset and a scale (`mg_batchn`: center=True, scale=True, momentum 0.95, epsilon 1e-5), the
heads' have neither (`center=False, scale=False`). The full size (19x19, 64 filters, 6 trunk
blocks, fc 64) has 738,975 params (tests/test_minigo.py counts them). `convert.py` maps the
reference's TF variables onto these modules.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import linen as nn

from tpubench.nn.initializers import conv_kernel_init


def _conv(features: int, kernel: int, name: str) -> nn.Conv:
    init = conv_kernel_init(nn.initializers.variance_scaling(1.0, "fan_avg", "uniform"))
    return nn.Conv(features, (kernel, kernel), padding="SAME", use_bias=False,
                   kernel_init=init, name=name)


def _dense(features: int, name: str) -> nn.Dense:
    init = nn.with_logical_partitioning(
        nn.initializers.variance_scaling(1.0, "fan_avg", "uniform"), ("go_in", "go_out"))
    return nn.Dense(features, kernel_init=init,
                    bias_init=nn.with_logical_partitioning(nn.initializers.zeros, ("go_out",)),
                    name=name)


class DualNet(nn.Module):
    """Returns (policy logits [B, N*N+1], value [B] in [-1, 1] for the player to move)."""

    board_size: int
    conv_width: int = 64
    fc_width: int = 64
    trunk_layers: int = 6
    dtype: jnp.dtype = jnp.float32

    def _bn(self, train: bool, name: str, affine: bool = True) -> nn.BatchNorm:
        return nn.BatchNorm(use_running_average=not train, momentum=0.95, epsilon=1e-5,
                            use_scale=affine, use_bias=affine, dtype=self.dtype, name=name)

    @nn.compact
    def __call__(self, x: jnp.ndarray, train: bool = False):
        x = x.astype(self.dtype)
        x = nn.relu(self._bn(train, "stem_bn")(_conv(self.conv_width, 3, "stem")(x)))
        for i in range(self.trunk_layers):
            y = nn.relu(self._bn(train, f"res{i}_bn1")(_conv(self.conv_width, 3, f"res{i}_a")(x)))
            y = self._bn(train, f"res{i}_bn2")(_conv(self.conv_width, 3, f"res{i}_b")(y))
            x = nn.relu(x + y)
        b = x.shape[0]
        p = nn.relu(self._bn(train, "policy_bn", affine=False)(_conv(2, 1, "policy_conv")(x)))
        logits = _dense(self.board_size * self.board_size + 1, "policy_fc")(p.reshape(b, -1))
        v = nn.relu(self._bn(train, "value_bn", affine=False)(_conv(1, 1, "value_conv")(x)))
        v = nn.relu(_dense(self.fc_width, "value_fc")(v.reshape(b, -1)))
        value = jnp.tanh(_dense(1, "value_out")(v))[:, 0]
        return logits.astype(jnp.float32), value.astype(jnp.float32)
