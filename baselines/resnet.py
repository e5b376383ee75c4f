"""The strongest simple baselines of the ResNet mini, on the mini's own train/eval split.

It reads the mini's data through the workload's own data code (the exact arrays the model
trains and evaluates on) and fits scikit-learn baselines on MNIST-5k
(`workloads/resnet/input_pipeline.load_mnist5k`, 4,000 / 1,000): k-NN for k = 1, 3, 5 on raw
pixels, an RBF SVC (C = 1 and 10), multinomial logistic regression. Metric: top-1.

    JAX_PLATFORMS=cpu python baselines/resnet.py [--only=SUBSTRING]

Deterministic (fixed seeds); the figures are quoted in the mini config's docstring.
"""

from __future__ import annotations

import common  # the sibling baselines/common.py


def resnet_baselines(only: str = "") -> dict[str, float]:
    """Top-1 of pixel-space baselines on the ResNet mini's split (MNIST-5k, 4,000 / 1,000)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    from workloads.resnet import input_pipeline

    data = input_pipeline.load_mnist5k()
    xtr = data["train"]["inputs"].reshape(len(data["train"]["label"]), -1)
    xte = data["test"]["inputs"].reshape(len(data["test"]["label"]), -1)
    ytr, yte = data["train"]["label"], data["test"]["label"]
    models = {f"{k}-NN (euclidean, raw pixels)": KNeighborsClassifier(k) for k in (1, 3, 5)}
    models["RBF SVC, C=1, gamma='scale'"] = SVC(C=1.0)
    models["RBF SVC, C=10, gamma='scale'"] = SVC(C=10.0)
    models["logistic regression (multinomial, C=1)"] = LogisticRegression(max_iter=3000)
    results = {}
    for name, model in models.items():
        if only not in name:
            continue
        value, seconds = common.timed(lambda m=model: m.fit(xtr, ytr).score(xte, yte))
        results[name] = value
        common.row("resnet", name, value, seconds)
    return results


if __name__ == "__main__":
    common.main("resnet", resnet_baselines, "top-1", __doc__)
