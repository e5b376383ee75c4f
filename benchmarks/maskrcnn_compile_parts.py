"""How long XLA takes to compile each heavy part of Mask R-CNN's train step, alone, at a config's
shapes, for a target's devices (libtpu compile-only TPU devices, as `tpubench fit` gets them),
the global batch sharded over them: to find what dominates the full config's fit
(workloads/maskrcnn/configs/full.py's docstring).

    JAX_PLATFORMS=cpu python benchmarks/maskrcnn_compile_parts.py v4:2x2x1 [PART ...] \
        [--config.KEY=VALUE ...]

PART (default all): box_pool / mask_pool (RoIAlign of the sampled RoIs over P2..P5, forward
and the gradient w.r.t. the maps), proposals (the per-level top-k, decode and greedy NMS),
rpn_targets (the anchor matcher and the balanced sampler). Prints one line per part: the
compile time (wall and this process's CPU: the host is shared) and XLA's temporaries per device.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from tpubench import config as config_lib
from tpubench import registry
from tpubench.platform import topology
from workloads.maskrcnn import rcnn


def _parts(w, b: int):
    """name -> (function, its abstract arguments) at the workload's shapes for a batch of b."""
    s, strides, cfg = w.settings, w.strides, w.config
    size, c = int(cfg.data.image_size), int(cfg.model.fpn_channels)
    dtype = jnp.bfloat16 if cfg.model.dtype == "bfloat16" else jnp.float32
    feats = [jax.ShapeDtypeStruct((b, -(-size // st), -(-size // st), c), dtype)
             for st in strides[:-1]]
    hw = jax.ShapeDtypeStruct((b, 2), jnp.float32)
    anchors = [jnp.asarray(a) for a in w.anchors]

    def pool(size_, count):
        def f(fs, rois):
            def loss(fs):
                out = jax.vmap(lambda f, r: rcnn._pool(f, r, size_, s, strides[:-1]))(fs, rois)
                return jnp.sum(out * out)
            return jax.grad(loss)(fs)
        return f, (feats, jax.ShapeDtypeStruct((b, count, 4), jnp.float32))

    def props(lg, dl, im):
        return jax.vmap(lambda g, d, i: rcnn.proposals(g, d, anchors, i, s))(lg, dl, im)

    level_logits = [jax.ShapeDtypeStruct((b, len(a)), jnp.float32) for a in w.anchors]
    level_deltas = [jax.ShapeDtypeStruct((b, len(a), 4), jnp.float32) for a in w.anchors]
    all_anchors = jnp.concatenate(anchors)
    m = int(cfg.data.max_boxes)

    def targets(keys, gt, gv, im):
        return jax.vmap(lambda k, g, v, i: rcnn.rpn_targets(k, g, v, all_anchors, i, s))(
            keys, gt, gv, im)

    return {
        "box_pool": pool(s.box_pool, s.roi_batch),
        "mask_pool": pool(s.mask_pool, s.mask_slots),
        "proposals": (props, (level_logits, level_deltas, hw)),
        "rpn_targets": (targets, (jax.ShapeDtypeStruct((b, 2), jnp.uint32),
                                  jax.ShapeDtypeStruct((b, m, 4), jnp.float32),
                                  jax.ShapeDtypeStruct((b, m), jnp.bool_), hw)),
    }


def main(argv: list[str]) -> None:
    overrides, words = config_lib.split_overrides(argv)
    target, names = words[0], words[1:]
    cfg = config_lib.load("maskrcnn", "full", overrides)
    w = registry.create(cfg)
    topo = topology.parse(target)
    mesh = Mesh(np.asarray(topo.devices()), ("data",))
    shard = NamedSharding(mesh, P("data"))
    b = int(cfg.data.global_batch_size)
    parts = _parts(w, b)
    for name in names or list(parts):
        fn, args = parts[name]
        args = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=shard),
                            args)
        t, cpu = time.perf_counter(), time.process_time()
        compiled = jax.jit(fn).lower(*args).compile()
        secs, cpu = time.perf_counter() - t, time.process_time() - cpu
        temps = compiled.memory_analysis().temp_size_in_bytes
        print(f"{name}: compiled in {secs:.1f} s ({cpu:.1f} s of CPU) for {topo.name} (image "
              f"{cfg.data.image_size}, batch {b}), temps {temps / 2**30:.3f} GiB per device",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
