"""The GNMT mini's learning speed (slow): its init (configs/mini.py) trains measurably faster per
step than the reference's init at the mini's width. Not a time-to-quality test: the mini has no
measured BLEU target yet (configs/mini.py, NOT FINISHED)."""

import jax
import optax
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from workloads.gnmt.workload import GNMTWorkload

STEPS = 75
# Loss per token of the 75th batch, seed 0 (benchmarks/gnmt_probe.py, the mini's batches and
# schedule): mini init 5.381; U(+-0.3) with the reference's g 5.441; U(+-0.1) with g = 1.0 5.775.
MAX_LOSS_AT_75 = 5.6


@pytest.mark.slow
def test_mini_init_learns_faster_than_the_references_at_width_128(shared_data_dir, tmp_path):
    """75 optimizer steps of the mini (the harness's loss and optimizer on its real batches)
    bring the loss per token of batch 75 below 5.6. Bites: the reference's init at this width
    (`model.init_weight=0.1`, measured 5.775 at step 75 with g = 1.0)."""
    c = config_lib.load("gnmt", "mini")
    config_lib.apply_overrides(c, {"data.dir": str(shared_data_dir),
                                   "data.cache_dir": str(tmp_path / "cache")})
    w = GNMTWorkload(c)
    w.prepare()
    w.check_data()
    params = nn.meta.unbox(w.init(jax.random.PRNGKey(c.run.seed))[0])
    tx = w.optimizer()

    @jax.jit
    def step(params, opt_state, batch, rng):
        (_, (_, metrics)), grads = jax.value_and_grad(w.loss, has_aux=True)(
            params, {}, batch, rng)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, metrics["loss_per_token"]

    opt_state = tx.init(params)
    batches = w.train_batches(0, 0, 1)
    for s in range(1, STEPS + 1):
        params, opt_state, loss = step(params, opt_state, next(batches), jax.random.PRNGKey(s))
    assert float(loss) < MAX_LOSS_AT_75
