"""The strongest simple baselines of the ResNet mini, on the mini's own train/eval split.

It reads the mini's data through the workload's own data code (the exact arrays the model
trains and evaluates on: `workloads/resnet/input_pipeline.load_mnist5k`, MNIST-5k at the mini's
14x14 or, with --size=28, as shipped; 4,000 / 1,000) and fits scikit-learn baselines on raw
pixels: k-NN, an RBF SVC and
multinomial logistic regression. Each one's hyperparameters are chosen by 3-fold stratified
cross-validation on the train split (never on the held-out digits), then it is refit on the
whole train split and scored once on the held-out split. Metric: top-1.

    JAX_PLATFORMS=cpu python baselines/resnet.py [--only=SUBSTRING] [--size=14|28]

Deterministic (fixed folds); the figures are quoted in the mini config's docstring. Measured
(2026-12-05, 14x14): SVC 0.9660 (CV: C=10, gamma 2x 'scale', CV top-1 0.9623), k-NN 0.9370
(CV: k=3), logistic regression 0.9050 (CV: C=1); 28x28: SVC 0.964.
"""

from __future__ import annotations

import common  # the sibling baselines/common.py

# The grids a practitioner would sweep. SVC: C over two decades; gamma around sklearn's
# 'scale' (1 / (n_features * X.var())), which is the usual start.
KNN_KS = (1, 3, 5, 7)
SVC_CS = (1.0, 3.0, 10.0, 30.0)
SVC_GAMMA_FACTORS = (0.5, 1.0, 2.0, 4.0)
LOGREG_CS = (0.01, 0.1, 1.0, 10.0)


def resnet_baselines(only: str = "", size: int = 14) -> dict[str, float]:
    """Top-1 of CV-tuned pixel-space baselines on the ResNet mini's split."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    from workloads.resnet import input_pipeline

    data = input_pipeline.load_mnist5k(size)
    xtr = data["train"]["inputs"].reshape(len(data["train"]["label"]), -1)
    xte = data["test"]["inputs"].reshape(len(data["test"]["label"]), -1)
    ytr, yte = data["train"]["label"], data["test"]["label"]
    scale = 1.0 / (xtr.shape[1] * xtr.var())  # sklearn's gamma='scale' on this train split
    grids = {
        "k-NN (euclidean, raw pixels), k by CV": (
            KNeighborsClassifier(), {"n_neighbors": list(KNN_KS)}),
        "RBF SVC, C and gamma by CV": (
            SVC(), {"C": list(SVC_CS), "gamma": [f * scale for f in SVC_GAMMA_FACTORS]}),
        "logistic regression (multinomial), C by CV": (
            LogisticRegression(max_iter=3000), {"C": list(LOGREG_CS)}),
    }
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    results = {}
    for name, (model, grid) in grids.items():
        if only not in name:
            continue
        search = GridSearchCV(model, grid, cv=folds, n_jobs=-1)
        value, seconds = common.timed(lambda s=search: s.fit(xtr, ytr).score(xte, yte))
        best = {k: (f"{float(v / scale):g}x 'scale'" if k == "gamma" else v)
                for k, v in search.best_params_.items()}
        print(f"        best by CV: {best}, CV top-1 {search.best_score_:.4f}", flush=True)
        results[name] = value
        common.row("resnet", name, value, seconds)
    return results


if __name__ == "__main__":
    common.main("resnet", resnet_baselines, "top-1", __doc__, size=14)
