"""A vectorized stratified bootstrap over runs, seeded with its own numpy ``Generator``.

The estimators are rliable's (Agarwal et al., NeurIPS 2021): the mean, median and interquartile
mean (IQM) of scores across runs and tasks, the optimality gap, the probability of improvement and
score distributions (performance profiles), each with a percentile interval from a *stratified*
bootstrap: the runs of every unit (one task's runs of one method) are resampled with replacement,
independently of every other unit.

Instead of gathering resampled values replicate by replicate, the bootstrap draws, for a block of
replicates at once, how many times each run is drawn: ``counts`` (replicates x runs). A statistic
that is a sum over runs (a mean, a tail sum, a share above a threshold) is then one matrix product
of the counts with a per-run feature matrix, shared by every statistic measured on the same runs;
order statistics (the IQM's quartiles) need the counts of the few runs near the quartiles only, and
the probability of improvement needs cumulative counts in sorted order. rliable stays the reference
the tests compare against: the same point estimates, interval ends within Monte-Carlo error.

Everything here works on plain numpy arrays; :mod:`rlcompare.scoring.engine` maps criteria onto it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

DEFAULT_REPS = 2_000
DEFAULT_CONFIDENCE = 0.95
#: Elements of one block of counts (replicates x runs); bounds the memory of a bootstrap (32 MiB).
BLOCK_ELEMENTS = 1 << 22
#: Pooled sets up to this size get their IQM from fully sorted counts; larger ones use quartile bands.
EXACT_IQM_RUNS = 4_096
#: Tasks with at most this many run pairs (m x n) get their Mann-Whitney U from the full comparison matrix.
DENSE_PAIRS = 1_024

ScoreArrays = np.ndarray | Sequence[np.ndarray]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap confidence interval over ``n`` runs."""

    point: float
    low: float
    high: float
    n: int

    def format(self, digits: int = 1) -> str:
        if self.n == 0:
            return "missing"
        text = f"{self.point:.{digits}f}"
        if self.n > 1:
            text += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return text + f" (n={self.n})"


# -- units and their counts ----------------------------------------------------------------------------


class Layout:
    """Resampling units side by side in one flat array of runs.

    Unit ``u`` owns the positions ``offsets[u] : offsets[u] + sizes[u]``. Units are placed in order
    of size, so the units of one size are contiguous and their counts form a (units x runs) block.
    """

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        if self.sizes.size and self.sizes.min() < 1:
            raise ValueError("every resampling unit needs at least one run")
        order = np.argsort(self.sizes, kind="stable")
        placed = np.zeros(len(self.sizes), dtype=np.int64)
        placed[order] = np.concatenate([[0], np.cumsum(self.sizes[order])[:-1]]) if len(order) else []
        self.offsets = placed
        self.total = int(self.sizes.sum())
        #: (size, first position, number of units, their unit ids in placement order)
        self.groups: list[tuple[int, int, int, np.ndarray]] = []
        sorted_sizes = self.sizes[order]
        for size in np.unique(sorted_sizes):
            members = order[sorted_sizes == size]
            self.groups.append((int(size), int(self.offsets[members[0]]), len(members), members))

    def __len__(self) -> int:
        return len(self.sizes)

    def positions(self, unit: int) -> np.ndarray:
        return np.arange(self.offsets[unit], self.offsets[unit] + self.sizes[unit])

    def counts(self, rng: np.random.Generator, reps: int) -> np.ndarray:
        """How often each run is drawn in ``reps`` stratified resamples: (reps x total) float64."""
        counts = np.empty((reps, self.total))
        for size, start, units, _ in self.groups:
            width = size * units
            if size == 1:
                counts[:, start:start + width] = 1.0
                continue
            draws = rng.integers(0, size, size=(reps, units, size))
            draws += (np.arange(reps) * width)[:, None, None] + (np.arange(units) * size)[None, :, None]
            block = np.bincount(draws.ravel(), minlength=reps * width)
            counts[:, start:start + width] = block.reshape(reps, width)
        return counts

    def blocks(self, reps: int, seed: int, block_elements: int = BLOCK_ELEMENTS) -> Iterator[np.ndarray]:
        """Counts for ``reps`` replicates, a block of replicates at a time (all from one seeded stream)."""
        rng = np.random.default_rng(seed)
        per_block = max(1, block_elements // max(1, self.total))
        done = 0
        while done < reps:
            size = min(per_block, reps - done)
            yield self.counts(rng, size)
            done += size


# -- statistics ---------------------------------------------------------------------------------------


class Statistic(Protocol):
    """Something evaluated on every block of bootstrap counts (and on the original data)."""

    def point(self) -> np.ndarray:
        """The statistic on the original data (every run drawn once)."""

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        """The statistic for each replicate of a block of counts: (replicates, *shape)."""


class LinearSums:
    """Sums of per-run features, one column per feature: ``sum_i counts_i * feature_i`` over the
    runs of the feature's unit. Features of one unit share one matrix product with its counts."""

    def __init__(self, layout: Layout, features: Sequence[tuple[int, np.ndarray]]) -> None:
        self.layout = layout
        self.width = len(features)
        per_unit: dict[int, list[tuple[int, np.ndarray]]] = {}
        for column, (unit, values) in enumerate(features):
            values = np.asarray(values, dtype=float)
            if values.shape != (layout.sizes[unit],):
                raise ValueError(f"feature {column}: {values.shape[0]} values for a unit of {layout.sizes[unit]} runs")
            per_unit.setdefault(unit, []).append((column, values))
        # one (units x runs x features) tensor per size group, padded to the widest unit of the group
        self._plans: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []
        for size, start, units, members in layout.groups:
            used = [(i, unit) for i, unit in enumerate(members) if unit in per_unit]
            if not used:
                continue
            depth = max(len(per_unit[unit]) for _, unit in used)
            tensor = np.zeros((len(used), size, depth))
            slots = np.array([i for i, _ in used])
            target_rows, target_depth, target_columns = [], [], []
            for row, (_, unit) in enumerate(used):
                for d, (column, values) in enumerate(per_unit[unit]):
                    tensor[row, :, d] = values
                    target_rows.append(row)
                    target_depth.append(d)
                    target_columns.append(column)
            self._plans.append((start, units, slots, tensor,
                                np.array([target_rows, target_depth, target_columns], dtype=np.int64)))

    def point(self) -> np.ndarray:
        return self.evaluate(np.ones((1, self.layout.total)))[0]

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        out = np.zeros((counts.shape[0], self.width))
        for start, units, slots, tensor, (rows, depth, columns) in self._plans:
            size = tensor.shape[1]
            block = counts[:, start:start + units * size].reshape(counts.shape[0], units, size)
            block = block[:, slots].transpose(1, 0, 2)  # (units, reps, runs)
            sums = np.matmul(block, tensor)  # (units, reps, depth)
            out[:, columns] = sums[rows, :, depth].T
        return out


@dataclass(frozen=True)
class Column:
    """One task's scores for one method: the unit whose runs they are, and one value per run."""

    unit: int
    values: np.ndarray


class Aggregates:
    """rliable's aggregate metrics of each pooled set of columns (a method's tasks): IQM, mean and
    median of task means, optimality gap (``gamma``). Output shape: (sets, 4) in :data:`NAMES` order.

    With the same number of runs in every task, each is exactly rliable's aggregate on the
    (runs x tasks) array; with different numbers, mean and median are over task means and IQM and
    optimality gap over the pooled runs.
    """

    NAMES = ("iqm", "mean", "median", "optimality_gap")

    def __init__(self, layout: Layout, sets: Sequence[Sequence[Column]], gamma: float = 1.0) -> None:
        self.layout = layout
        self.sets = [list(columns) for columns in sets]
        self.gamma = gamma
        features: list[tuple[int, np.ndarray]] = []
        self._means: list[list[int]] = []     # per set: feature index of each column's sum
        self._gaps: list[list[int]] = []      # per set: feature index of each column's clipped sum
        for columns in self.sets:
            means, gaps = [], []
            for column in columns:
                means.append(len(features))
                features.append((column.unit, column.values))
                gaps.append(len(features))
                features.append((column.unit, np.minimum(column.values, gamma)))
            self._means.append(means)
            self._gaps.append(gaps)
        self._iqms = []
        for columns in self.sets:
            iqm = TrimmedMean(layout, columns, len(features))
            features += iqm.features
            self._iqms.append(iqm)
        self._sums = LinearSums(layout, features)

    def point(self) -> np.ndarray:
        return self._combine(np.ones((1, self.layout.total)))[0]

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        return self._combine(counts)

    def _combine(self, counts: np.ndarray) -> np.ndarray:
        sums = self._sums.evaluate(counts)
        out = np.empty((counts.shape[0], len(self.sets), 4))
        for s, columns in enumerate(self.sets):
            sizes = np.array([self.layout.sizes[c.unit] for c in columns], dtype=float)
            task_means = sums[:, self._means[s]] / sizes
            out[:, s, 0] = self._iqms[s].evaluate(counts, sums)
            out[:, s, 1] = task_means.mean(axis=1)
            out[:, s, 2] = np.median(task_means, axis=1)
            out[:, s, 3] = self.gamma - sums[:, self._gaps[s]].sum(axis=1) / sizes.sum()
        return out


class TrimmedMean:
    """The 25% trimmed mean (scipy's ``trim_mean``) of the pooled runs of some columns.

    Sorted pooled values are split into: below the low quartile band, the low band, the middle,
    the high band, above the high band. Sums and counts of the outer regions come from linear
    features; only the runs in the two bands need their counts read, in sorted order. A replicate
    whose quartile falls outside its band (vanishingly rare: the bands span 8 standard deviations of
    the quartile's rank) is computed from fully sorted counts, as are small pooled sets.
    """

    def __init__(self, layout: Layout, columns: Sequence[Column], first_feature: int) -> None:
        values = np.concatenate([c.values for c in columns]) if columns else np.zeros(0)
        positions = np.concatenate([layout.positions(c.unit) for c in columns]) if columns else np.zeros(0, int)
        order = np.argsort(values, kind="stable")
        self.sorted_values = values[order]
        self.sorted_positions = positions[order]
        self.total = len(values)
        self.cut = int(0.25 * self.total)
        self.features: list[tuple[int, np.ndarray]] = []
        self.exact = self.total <= EXACT_IQM_RUNS
        if self.exact or self.total == 0:
            return
        band = min(self.cut, 64 + 8 * int(np.ceil(np.sqrt(self.total))))
        self.low_band = np.arange(self.cut - band, self.cut + band)
        self.high_band = np.arange(self.total - self.cut - band, self.total - self.cut + band)[::-1]
        rank = np.empty(self.total, dtype=np.int64)
        rank[order] = np.arange(self.total)
        below = rank < self.cut - band
        above = rank >= self.total - self.cut + band
        # per column: [total sum, count below, sum below, count above, sum above]
        offset = 0
        for column in columns:
            n = len(column.values)
            part = slice(offset, offset + n)
            v = column.values
            self.features += [(column.unit, v), (column.unit, below[part].astype(float)),
                              (column.unit, np.where(below[part], v, 0.0)),
                              (column.unit, above[part].astype(float)), (column.unit, np.where(above[part], v, 0.0))]
            offset += n
        self.first = first_feature
        self.columns = len(columns)

    def evaluate(self, counts: np.ndarray, sums: np.ndarray) -> np.ndarray:
        if self.total == 0:
            return np.full(counts.shape[0], np.nan)
        if self.exact:
            return self._sorted(counts[:, self.sorted_positions])
        block = sums[:, self.first:self.first + 5 * self.columns].reshape(counts.shape[0], self.columns, 5).sum(axis=1)
        total, below_n, below_sum, above_n, above_sum = block.T
        low, low_ok = self._tail(counts[:, self.sorted_positions[self.low_band]], self.sorted_values[self.low_band],
                                 below_n, below_sum)
        high, high_ok = self._tail(counts[:, self.sorted_positions[self.high_band]],
                                   self.sorted_values[self.high_band], above_n, above_sum)
        result = (total - low - high) / (self.total - 2 * self.cut)
        bad = ~(low_ok & high_ok)
        if bad.any():
            result[bad] = self._sorted(counts[bad][:, self.sorted_positions])
        return result

    def _tail(self, band_counts: np.ndarray, band_values: np.ndarray, outer_n: np.ndarray,
              outer_sum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sum of the ``cut`` most extreme resampled values, from the outer region and the band."""
        cumulative = outer_n[:, None] + np.cumsum(band_counts, axis=1)
        before = cumulative - band_counts
        taken = np.clip(self.cut - before, 0.0, band_counts)
        ok = (outer_n <= self.cut) & (cumulative[:, -1] >= self.cut)
        return outer_sum + taken @ band_values, ok

    def _sorted(self, sorted_counts: np.ndarray) -> np.ndarray:
        """Trimmed mean from counts in sorted order: each run's share of the kept middle."""
        upper = np.cumsum(sorted_counts, axis=1)
        lower = upper - sorted_counts
        kept = np.clip(upper, self.cut, self.total - self.cut) - np.clip(lower, self.cut, self.total - self.cut)
        return kept @ self.sorted_values / (self.total - 2 * self.cut)


class ImprovementProbability:
    """rliable's probability of improvement P(X > Y) of each pair, averaged over the pair's tasks:
    per task the Mann-Whitney U statistic (ties count a half) over ``m x n`` run pairs.

    Each pair is a list of tasks, each task an (X column, Y column). X and Y runs are resampled
    independently (their units differ), as rliable's independent stratified bootstrap does.
    """

    def __init__(self, layout: Layout, pairs: Sequence[Sequence[tuple[Column, Column]]]) -> None:
        self.layout = layout
        self.pairs = [list(tasks) for tasks in pairs]
        self._dense: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, float]] = []
        self._sparse: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray, float, float]] = []
        self._sorted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._keys: dict[int, int] = {}
        for p, tasks in enumerate(self.pairs):
            weight = 1.0 / len(tasks) if tasks else 0.0
            for x, y in tasks:
                m, n = len(x.values), len(y.values)
                px, py = layout.positions(x.unit), layout.positions(y.unit)
                if m * n <= DENSE_PAIRS:
                    wins = (x.values[:, None] > y.values[None, :]) + 0.5 * (x.values[:, None] == y.values[None, :])
                    self._dense.append((p, px, py, wins.astype(float), weight / (m * n)))
                else:
                    key = self._keys.setdefault(id(x), len(self._keys))  # one X column serves many pairs
                    if key not in self._sorted:
                        order = np.argsort(x.values, kind="stable")
                        self._sorted[key] = (x.values[order], px[order])
                    ordered = self._sorted[key][0]
                    below = np.searchsorted(ordered, y.values, side="left")
                    upto = np.searchsorted(ordered, y.values, side="right")
                    self._sparse.append((p, key, py, below, upto, float(m), weight / (m * n)))

    def point(self) -> np.ndarray:
        return self.evaluate(np.ones((1, self.layout.total)))[0]

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        out = np.zeros((counts.shape[0], len(self.pairs)))
        for p, px, py, wins, scale in self._dense:
            out[:, p] += np.einsum("rm,mn,rn->r", counts[:, px], wins, counts[:, py]) * scale
        cumulative: dict[int, np.ndarray] = {}  # per X column: counts cumulated in sorted order, shared by its pairs
        for p, key, py, below, upto, m, scale in self._sparse:
            if key not in cumulative:
                positions = self._sorted[key][1]
                table = np.zeros((counts.shape[0], len(positions) + 1))
                np.cumsum(counts[:, positions], axis=1, out=table[:, 1:])
                cumulative[key] = table
            table = cumulative[key]
            at_most, below_y = table[:, upto], table[:, below]
            # per Y run: X runs above it, plus half the ties
            wins = m - 0.5 * (at_most + below_y)
            out[:, p] += np.einsum("rn,rn->r", wins, counts[:, py]) * scale
        return out


class ScoreDistribution:
    """rliable's score distribution (performance profile): for each pooled set of columns, the
    share of its runs whose score exceeds each threshold tau. Output: (sets, taus)."""

    def __init__(self, layout: Layout, sets: Sequence[Sequence[Column]], taus: np.ndarray) -> None:
        self.layout = layout
        self.taus = np.asarray(taus, dtype=float)
        features = []
        self._index: list[np.ndarray] = []
        self._totals = []
        for columns in sets:
            indices = []
            for column in columns:
                above = column.values[:, None] > self.taus[None, :]
                for t in range(len(self.taus)):
                    indices.append(len(features))
                    features.append((column.unit, above[:, t].astype(float)))
            self._index.append(np.array(indices, dtype=np.int64).reshape(len(columns), len(self.taus)))
            self._totals.append(sum(len(c.values) for c in columns))
        self._sums = LinearSums(layout, features)

    def point(self) -> np.ndarray:
        return self.evaluate(np.ones((1, self.layout.total)))[0]

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        sums = self._sums.evaluate(counts)
        out = np.empty((counts.shape[0], len(self._index), len(self.taus)))
        for s, index in enumerate(self._index):
            out[:, s] = sums[:, index].sum(axis=1) / max(1, self._totals[s])
        return out


class ColumnMeans:
    """The mean of each column over its runs (a cell's mean over seeds). Output: (columns,)."""

    def __init__(self, layout: Layout, columns: Sequence[Column]) -> None:
        self.layout = layout
        self._sizes = np.array([layout.sizes[c.unit] for c in columns], dtype=float)
        self._sums = LinearSums(layout, [(c.unit, c.values) for c in columns])

    def point(self) -> np.ndarray:
        return self.evaluate(np.ones((1, self.layout.total)))[0]

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        return self._sums.evaluate(counts) / self._sizes


class WeightedMean:
    """A weighted sum of column means per set (an overall score). Output: (sets,)."""

    def __init__(self, layout: Layout, sets: Sequence[Sequence[tuple[Column, float]]]) -> None:
        self.layout = layout
        columns = [column for weighted in sets for column, _ in weighted]
        self._means = ColumnMeans(layout, columns)
        self._matrix = np.zeros((len(columns), len(sets)))
        row = 0
        for s, weighted in enumerate(sets):
            for _, weight in weighted:
                self._matrix[row, s] = weight
                row += 1

    def point(self) -> np.ndarray:
        return self.evaluate(np.ones((1, self.layout.total)))[0]

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        return self._means.evaluate(counts) @ self._matrix


# -- running -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """Point estimates and interval ends of one statistic, each shaped like the statistic; with
    ``replicates`` (replicates, *shape) when the caller asked :func:`bootstrap` to keep them."""

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    replicates: np.ndarray | None = None


def percentile_interval(point: np.ndarray, replicates: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The percentile interval of ``replicates`` (replicates, *shape) around ``point``: what
    :func:`bootstrap` reports for each statistic, for statistics derived from kept replicates."""
    point = np.asarray(point, dtype=float)
    if replicates.shape[0] == 0:
        return Interval(point, point.copy(), point.copy(), replicates)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(replicates, [tail, 100 - tail], axis=0)
    return Interval(point, low, high, replicates)


def bootstrap(
    layout: Layout, statistics: Sequence[Statistic], reps: int = DEFAULT_REPS,
    confidence: float = DEFAULT_CONFIDENCE, seed: int = 0, block_elements: int = BLOCK_ELEMENTS,
    keep: Collection[int] = (),
) -> list[Interval]:
    """Percentile intervals of every statistic from one shared stream of stratified resamples.

    All statistics see the same resamples, so statistics of the same runs are resampled jointly
    (a run is one replicate of everything measured on it). The point estimates are the statistics
    on the original data, as in rliable. The statistics at the positions in ``keep`` also return
    their replicates (for statistics derived from them, e.g. scores under perturbed weights).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from threadpoolctl import threadpool_limits

    replicates: list[list[np.ndarray]] = [[] for _ in statistics]
    # Many small matrix products: a multi-threaded BLAS only waits for its threads, and on a busy
    # machine (other runs, other workers) waits for the scheduler; measured 100x slower there.
    with threadpool_limits(limits=1, user_api="blas"):
        if layout.total:
            for counts in layout.blocks(reps, seed, block_elements):
                for i, statistic in enumerate(statistics):
                    replicates[i].append(statistic.evaluate(counts))
    results = []
    for i, (statistic, parts) in enumerate(zip(statistics, replicates, strict=True)):
        point = np.asarray(statistic.point(), dtype=float)
        values = np.concatenate(parts, axis=0) if parts else np.zeros((0, *point.shape))
        interval = percentile_interval(point, values, confidence)
        results.append(interval if i in keep else Interval(interval.point, interval.low, interval.high))
    return results


# -- rliable-shaped conveniences (tests and simple callers) -------------------------------------------


def layout_of(score_dict: Mapping[str, ScoreArrays]) -> tuple[Layout, dict[str, list[Column]]]:
    """A layout with one unit per (key, task) column of rliable-style ``(runs x tasks)`` arrays
    (or lists of arrays with different numbers of runs), and each key's columns."""
    sizes: list[int] = []
    columns: dict[str, list[Column]] = {}
    for key, arrays in score_dict.items():
        parts = [arrays] if isinstance(arrays, np.ndarray) else list(arrays)
        columns[key] = []
        for array in parts:
            array = np.asarray(array, dtype=float)
            if array.ndim == 1:
                array = array[:, None]
            for task in range(array.shape[1]):
                columns[key].append(Column(len(sizes), array[:, task].copy()))
                sizes.append(array.shape[0])
    return Layout(sizes), columns


def aggregate_intervals(
    score_dict: Mapping[str, ScoreArrays], reps: int = DEFAULT_REPS, confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0, gamma: float = 1.0,
) -> dict[str, dict[str, Estimate]]:
    """IQM, mean, median and optimality gap with intervals for each key of ``score_dict``."""
    layout, columns = layout_of(score_dict)
    keys = list(columns)
    [interval] = bootstrap(layout, [Aggregates(layout, [columns[k] for k in keys], gamma)], reps, confidence, seed)
    result = {}
    for s, key in enumerate(keys):
        runs = max((len(c.values) for c in columns[key]), default=0)
        result[key] = {name: Estimate(float(interval.point[s, i]), float(interval.low[s, i]),
                                      float(interval.high[s, i]), runs)
                       for i, name in enumerate(Aggregates.NAMES)}
    return result


def mean_interval(values: Sequence[float], reps: int = DEFAULT_REPS, seed: int = 0,
                  confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """Mean of the finite ``values`` with its percentile-bootstrap interval."""
    array = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if array.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    layout = Layout([array.size])
    [interval] = bootstrap(layout, [ColumnMeans(layout, [Column(0, array)])], reps, confidence, seed)
    return Estimate(float(interval.point[0]), float(interval.low[0]), float(interval.high[0]), int(array.size))


def difference_interval(after: Sequence[float], before: Sequence[float], reps: int = DEFAULT_REPS, seed: int = 0,
                        confidence: float = DEFAULT_CONFIDENCE) -> Estimate | None:
    """Mean of ``after`` minus mean of ``before`` (finite values of two independent sets of runs)
    with its percentile-bootstrap interval, each set resampled on its own (a two-unit stratified
    bootstrap); None when either set has fewer than two values (no interval to give)."""
    samples = [np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
               for values in (after, before)]
    if min(sample.size for sample in samples) < 2:
        return None
    layout = Layout([sample.size for sample in samples])
    [interval] = bootstrap(layout, [ColumnMeans(layout, [Column(i, s) for i, s in enumerate(samples)])],
                           reps, confidence, seed, keep=(0,))
    assert interval.replicates is not None
    difference = percentile_interval(np.asarray(samples[0].mean() - samples[1].mean()),
                                     interval.replicates[:, 0] - interval.replicates[:, 1], confidence)
    return Estimate(float(difference.point), float(difference.low), float(difference.high),
                    int(min(sample.size for sample in samples)))
