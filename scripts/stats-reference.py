#!/usr/bin/env python3
"""Write the reference values the statistics tests of run-record compare with.

The values come from scipy and numpy, computed once and committed as
run-record/tests/data/stats-reference.json, so the Rust tests need neither.
Run again only to extend the data:

    pip install scipy
    python3 scripts/stats-reference.py > run-record/tests/data/stats-reference.json

Sign conventions follow scipy: the t statistics and scipy's confidence
interval are for mean(first) - mean(second). Each "welch" row also holds
Student's pooled-variance test of the same pair.
"""

import json
import sys

import numpy as np
import scipy
from scipy import optimize, stats
from scipy.stats import _mannwhitneyu


def floats(values):
    return [float(v) for v in values]


def sample(rng, n, loc, scale, decimals=3):
    return floats(np.round(rng.normal(loc, scale, n), decimals))


def t_quantiles():
    dfs = list(range(1, 41)) + [50, 60, 80, 100, 120, 200, 1000]
    rows = []
    for p in (0.975, 0.995):
        for df in dfs:
            rows.append({"p": p, "df": df, "value": float(stats.t.ppf(p, df))})
    # Non-integer degrees of freedom, as Welch's test produces, and the
    # lower tail.
    for p, df in ((0.975, 5.5), (0.995, 17.3), (0.9, 2.5), (0.025, 7.0),
                  (0.005, 3.0), (0.6, 12.0), (0.9995, 4.0)):
        rows.append({"p": p, "df": df, "value": float(stats.t.ppf(p, df))})
    return rows


def normal_quantiles():
    ps = [1e-12, 1e-6, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.4,
          0.5, 0.6, 0.9, 0.975, 0.995, 0.999, 1.0 - 1e-9]
    return [{"p": p, "value": float(stats.norm.ppf(p))} for p in ps]


def normal_cdf():
    xs = [-10.0, -5.0, -3.0, -1.96, -1.0, -0.5, 0.0, 0.3, 1.0, 1.2, 1.3,
          2.5, 5.0, 8.0]
    return [{"x": x, "value": float(stats.norm.cdf(x))} for x in xs]


def t_cdf():
    rows = []
    for df in (1, 2, 3, 5, 7.5, 10, 30, 100, 1000):
        for t in (-50.0, -5.0, -2.0, -0.5, 0.0, 0.1, 1.0, 2.2, 4.0, 30.0):
            rows.append({"t": t, "df": df, "value": float(stats.t.cdf(t, df))})
    return rows


def mann_whitney(rng):
    pairs = []

    def add(name, first, second, method="auto"):
        for order, (a, b) in (("", (first, second)), (" reversed", (second, first))):
            res = stats.mannwhitneyu(a, b, alternative="two-sided", method=method)
            ties = len(set(a + b)) < len(a + b)
            resolved = method
            if method == "auto":
                resolved = _mannwhitneyu._mwu_choose_method(len(a), len(b), ties)
            pairs.append({
                "name": name + order,
                "first": a,
                "second": b,
                "method": method,
                "resolved_method": resolved,
                "u_first": float(res.statistic),
                "p_value": float(res.pvalue),
            })

    add("small exact overlap",
        [1.1, 2.3, 3.5, 4.2, 6.0], [2.0, 4.0, 5.1, 6.6, 7.7, 8.2])
    add("small exact separated", [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0])
    add("exact one small side", sample(rng, 3, 10.0, 1.0), sample(rng, 20, 11.0, 1.0))
    add("exact size eight", sample(rng, 8, 0.0, 1.0), sample(rng, 8, 0.8, 1.0))
    add("small ties", [1.0, 2.0, 2.0, 3.0, 5.0], [2.0, 3.0, 3.0, 4.0, 6.0, 6.0])
    add("large asymptotic", sample(rng, 30, 100.0, 5.0), sample(rng, 25, 103.0, 5.0))
    add("large ties asymptotic",
        floats(np.round(rng.normal(10.0, 2.0, 40))),
        floats(np.round(rng.normal(11.0, 2.0, 35))))
    add("explicit exact medium", sample(rng, 12, 5.0, 1.0), sample(rng, 15, 5.9, 1.0),
        method="exact")
    add("explicit asymptotic small", [1.5, 2.5, 3.5, 9.0], [4.0, 5.0, 6.0, 7.0, 8.0],
        method="asymptotic")
    add("explicit exact with ties", [1.0, 2.0, 2.0, 4.0], [2.0, 3.0, 5.0, 6.0, 7.0],
        method="exact")
    add("all tied", [3.0, 3.0, 3.0], [3.0, 3.0])
    add("one each", [1.0], [2.0])
    return pairs


def welch(rng):
    rows = []

    def add(name, first, second):
        res = stats.ttest_ind(first, second, equal_var=False)
        pooled = stats.ttest_ind(first, second, equal_var=True)
        row = {
            "student_t": float(pooled.statistic),
            "student_p_value": float(pooled.pvalue),
            "name": name,
            "first": first,
            "second": second,
            "t": float(res.statistic),
            "df": float(res.df),
            "p_value": float(res.pvalue),
            "intervals": [],
        }
        for level in (0.95, 0.99):
            ci = res.confidence_interval(confidence_level=level)
            row["intervals"].append({
                "level": level,
                "first_minus_second_low": float(ci.low),
                "first_minus_second_high": float(ci.high),
            })
        rows.append(row)

    add("equal sizes", sample(rng, 10, 100.0, 3.0), sample(rng, 10, 92.0, 3.0))
    add("unequal variances", sample(rng, 6, 50.0, 1.0), sample(rng, 15, 51.0, 6.0))
    add("no difference", sample(rng, 20, 7.0, 0.5), sample(rng, 18, 7.0, 0.5))
    add("small", [9.5, 10.1, 10.4], [8.8, 9.0, 9.9, 9.1])
    add("one constant", [5.0, 5.0, 5.0], [4.0, 6.0, 5.5, 7.0])
    add("throughput regression",
        sample(rng, 8, 9.4e9, 4.0e7, decimals=0),
        sample(rng, 8, 8.64e9, 4.0e7, decimals=0))
    return rows


def mean_intervals(rng):
    rows = []
    sets = [
        [10.0, 12.0],
        [10.0, 10.5, 9.8],
        sample(rng, 5, 1000.0, 10.0),
        sample(rng, 10, 42.0, 4.0),
        sample(rng, 30, 9.4e9, 1.0e8, decimals=0),
    ]
    for values in sets:
        arr = np.asarray(values)
        for level in (0.95, 0.99):
            low, high = stats.t.interval(level, len(arr) - 1,
                                         loc=arr.mean(), scale=stats.sem(arr))
            rows.append({
                "samples": values,
                "level": level,
                "mean": float(arr.mean()),
                "low": float(low),
                "high": float(high),
            })
    return rows


def percentiles(rng):
    rows = []
    sets = [[3.0], [1.0, 2.0], [5.0, 1.0, 4.0, 2.0, 3.0], sample(rng, 17, 50.0, 20.0)]
    for values in sets:
        for pct in (0.0, 10.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0):
            rows.append({"values": values, "pct": pct,
                         "value": float(np.percentile(values, pct))})
    return rows


def ratios():
    """Intervals on mean(second) / mean(first). Fieller's bounds are found
    by inverting its pivot with a root finder rather than by the closed
    form the Rust code uses; the log-scale bounds when Fieller's interval
    is unbounded."""
    rng = np.random.default_rng(20261201)
    rows = []

    def add(name, first, second):
        a, b = np.mean(second), np.mean(first)
        v_a = np.var(second, ddof=1) / len(second)
        v_b = np.var(first, ddof=1) / len(first)
        total = v_a + v_b
        df = total ** 2 / (v_a ** 2 / (len(second) - 1) + v_b ** 2 / (len(first) - 1))
        for level in (0.95, 0.99):
            t = stats.t.ppf(0.5 + level / 2.0, df)
            row = {"name": name, "first": first, "second": second,
                   "level": level, "ratio": float(a / b)}
            if t * t * v_b < b * b:
                def pivot(r):
                    return (a - r * b) ** 2 - t * t * (v_a + r * r * v_b)
                r0 = a / b
                step = max(abs(r0), 1e-9)
                high = r0 + step
                while pivot(high) < 0:
                    high += step
                low = r0 - step
                while pivot(low) < 0:
                    low -= step
                row["method"] = "fieller"
                row["low"] = float(optimize.brentq(pivot, low, r0, xtol=1e-15, rtol=1e-15))
                row["high"] = float(optimize.brentq(pivot, r0, high, xtol=1e-15, rtol=1e-15))
            else:
                half = t * np.sqrt(v_a / a ** 2 + v_b / b ** 2)
                row["method"] = "log_scale"
                row["low"] = float(np.exp(np.log(a / b) - half))
                row["high"] = float(np.exp(np.log(a / b) + half))
            rows.append(row)

    add("ten percent slower", sample(rng, 10, 100.0, 3.0), sample(rng, 10, 90.0, 3.0))
    add("hundredfold slower, noisy base",
        sample(rng, 11, 11.8e9, 5.0e9, decimals=0),
        sample(rng, 10, 2.1e8, 6.0e7, decimals=0))
    add("no change", sample(rng, 6, 42.0, 2.0), sample(rng, 9, 42.0, 2.0))
    add("faster, unequal sizes", sample(rng, 3, 1000.0, 40.0), sample(rng, 12, 1200.0, 10.0))
    add("base near zero", [0.5, 2.0, 0.2, 3.5], [5.0, 6.0, 5.5, 4.5])
    return rows


def main():
    rng = np.random.default_rng(20240611)
    document = {
        "generator": "scipy %s, numpy %s" % (scipy.__version__, np.__version__),
        "t_quantiles": t_quantiles(),
        "normal_quantiles": normal_quantiles(),
        "normal_cdf": normal_cdf(),
        "t_cdf": t_cdf(),
        "mann_whitney": mann_whitney(rng),
        "welch": welch(rng),
        "mean_intervals": mean_intervals(rng),
        "percentiles": percentiles(rng),
        "ratios": ratios(),
    }
    json.dump(document, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
