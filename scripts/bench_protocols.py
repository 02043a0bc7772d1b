"""Two measurements of the same configurations on the same datasets: how far the shipped
hold-out knowledge and the store rebuilt under ``metabo tune``'s protocol agree (issue 31).

    python scripts/bench_protocols.py --kb STORE [--metric error_rate] [--top 10]

STORE holds both builds (``metabo kb import data/kb-holdout`` and ``metabo kb import
data/kb`` into one file). For every dataset and every configuration measured under both
protocols (the rebuilt store draws the same seeded configurations, so its first rounds of
the 12 old algorithms are the old ones), a configuration's value under a protocol is the
mean of its folds. Printed per dataset and as medians: the number of shared
configurations, Spearman's rank correlation of the two measurements, how many of the
``--top`` best under one are among the ``--top`` best under the other, and each
protocol's validation error against the test error the *other* build measured (the 20%
both keep out of training: the same rows up to one of rounding; the other build's models,
so that no model is scored twice), which says which measurement ranks as unseen data do.
"""

from __future__ import annotations

import argparse

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", required=True)
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args(argv)

    import pandas as pd
    from scipy.stats import spearmanr

    from metabo.kb import KnowledgeBase

    with KnowledgeBase(args.kb, read_only=True) as kb:
        frame = kb.query(
            "SELECT r.dataset_id, d.name, r.config_id, r.protocol, r.metric, avg(r.value) AS v, count(*) AS folds "
            "FROM runs r JOIN datasets d USING (dataset_id) WHERE r.status = 'ok' AND r.metric IN (?, ?) "
            "GROUP BY ALL", [args.metric, f"test_{args.metric}"])
    holdout = frame["protocol"].str.contains("max_train=2000")
    frame["how"] = holdout.map({True: "hold-out", False: "tune"})
    wide = frame.pivot_table(index=["dataset_id", "name", "config_id"], columns=["how", "metric"], values="v")
    valid, test = args.metric, f"test_{args.metric}"
    need = [("hold-out", valid), ("tune", valid), ("hold-out", test), ("tune", test)]
    if not all(c in wide.columns for c in need):
        raise SystemExit(f"{args.kb} lacks one of the two builds' {args.metric} runs")
    wide = wide.dropna(subset=need)
    rows = []
    for (_d, name), part in wide.groupby(level=[0, 1]):
        if len(part) < 2 * args.top:
            continue
        old, new = part[("hold-out", valid)], part[("tune", valid)]
        old_test, new_test = part[("hold-out", test)], part[("tune", test)]
        best = {k: set(s.nsmallest(args.top).index)
                for k, s in (("old", old), ("new", new), ("old_test", old_test), ("new_test", new_test))}
        rows.append({"dataset": name, "configs": len(part),
                     "spearman": spearmanr(old, new)[0],
                     f"shared of {args.top} best": len(best["old"] & best["new"]),
                     "hold-out~tune's test": spearmanr(old, new_test)[0],
                     "tune~hold-out's test": spearmanr(new, old_test)[0],
                     f"hold-out top {args.top} in tune's test's": len(best["old"] & best["new_test"]),
                     f"tune top {args.top} in hold-out's test's": len(best["new"] & best["old_test"])})
    table = pd.DataFrame(rows)
    if table.empty:
        raise SystemExit("no dataset has enough configurations measured both ways")
    pd.set_option("display.width", 200)
    print(f"{args.metric} of the same configurations measured both ways, per dataset "
          f"(hold-out: 60/20/20, at most 2,000 training rows; tune: 5-fold CV up to 3,000 rows, else 60/20/20 "
          f"on every row; X~Y's test: X's validation error against the test error the other build measured)")
    print(table.round(3).to_string(index=False))
    med = table.drop(columns=["dataset"]).median()
    print(f"\n{len(table)} datasets; medians: " + ", ".join(f"{k} {v:.3g}" for k, v in med.items()))
    from benchmarks.compare import wilcoxon_p

    a, b = table["tune~hold-out's test"], table["hold-out~tune's test"]
    print(f"tune's measurement ranks as the other build's test part better than the hold-out's on {int((a > b).sum())} "
          f"datasets, worse on {int((a < b).sum())} (Wilcoxon p {wilcoxon_p(a.to_numpy(), b.to_numpy()):.3g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
