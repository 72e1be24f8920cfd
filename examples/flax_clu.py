"""A Flax/JAX training loop logged through clu's MetricWriter interface, no TensorFlow.

    python examples/flax_clu.py [logdir]
"""

import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from summarylib.integrations.clu import MetricWriter


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(32)(x)))


logdir = sys.argv[1] if len(sys.argv) > 1 else "logs/flax_clu"
model = MLP()
x = jnp.linspace(-2, 2, 128).reshape(-1, 1)
y = jnp.sin(3 * x)
params = model.init(jax.random.PRNGKey(0), x)
tx = optax.adam(1e-2)
opt_state = tx.init(params)


@jax.jit
def train_step(params, opt_state):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
    updates, opt_state = tx.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state, loss


writer = MetricWriter(logdir)
writer.write_hparams({"optimizer": "adam", "learning_rate": 1e-2, "hidden": 32})
for step in range(300):
    params, opt_state, loss = train_step(params, opt_state)
    writer.write_scalars(step, {"loss": loss})  # a device array: copied off the step
    if step % 100 == 0:
        writer.write_histograms(step, {"dense0/kernel": params["params"]["Dense_0"]["kernel"]})
writer.close()
print(f"wrote {logdir}")
