"""GP surrogate benchmark: fit, warm refit and prediction times; the conditional kernel's
block-wise Cholesky against the same model computed densely.

Prints medians over ``--reps`` repetitions, wall-clock and CPU (process) seconds:
- fit (MAP, default restarts) at n = 50, 100, 200 in 5-d; ``add`` of one point and the warm
  ``refit`` that follows it (the per-iteration cost of an SMBO loop);
- predict (mean and variance) at 10,000 points;
- conditional kernel (thesis 5.4.1) with 1, 2, 3, 4, 8 equal branches and the same total
  n: log-marginal-likelihood + gradient evaluation and full fit, block-wise
  (:class:`ConditionalGP`) against dense (one n x n kernel matrix zeroed across branches).

Usage: python scripts/bench_gp.py [--reps 5] [--n-cond 240] [--dim 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from metabo.surrogates import ConditionalGP, GaussianProcess, Kernel, Matern52


class DenseConditional(Kernel):
    """The conditional kernel computed densely: the last input column is the branch,
    ``k_C = k(x[:-1], x'[:-1]) [branch == branch']`` on the full n x n matrix."""

    name = "dense-conditional"

    def __init__(self, base: Kernel) -> None:
        self.base = base

    def _mask(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return A[:, -1, None] == B[None, :, -1]

    def __call__(self, A: np.ndarray, B: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        return self.base(A[:, :-1], B[:, :-1], lengthscales[:-1]) * self._mask(A, B)

    def grad_contract(self, X: np.ndarray, lengthscales: np.ndarray, K: np.ndarray, M: np.ndarray) -> np.ndarray:
        g = self.base.grad_contract(X[:, :-1], lengthscales[:-1], K, M * self._mask(X, X))
        return np.r_[g, 0.0]

    def gradient(self, X: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
        g = self.base.gradient(X[:, :-1], lengthscales[:-1]) * self._mask(X, X)[:, :, None]
        return np.concatenate([g, np.zeros(g.shape[:2] + (1,))], axis=2)


def timed(f: Callable[[], object], reps: int, setup: Callable[[], object] | None = None) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``f`` (``setup`` runs untimed before each)."""
    wall, cpu = [], []
    for _ in range(reps):
        if setup is not None:
            setup()
        w, c = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def problem(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(6 * X[:, 0]) + (X[:, 1] - 0.5) ** 2 + 0.3 * X[:, 2] + 0.05 * rng.standard_normal(n)
    return X, y


def fmt(t: tuple[float, float]) -> str:
    return f"{t[0] * 1e3:9.1f} ms ({t[1] * 1e3:7.1f} cpu)"


def bench_dense(d: int, reps: int) -> None:
    print(f"GaussianProcess, Matern 5/2 ARD, {d}-d, MAP with 2 restarts")
    print(f"{'n':>5}  {'fit':>26}  {'add 1 point':>26}  {'warm refit':>26}")
    for n in (50, 100, 200):
        X, y = problem(n + 1, d, n)
        fit = timed(lambda X=X, y=y, n=n: GaussianProcess(seed=0).fit(X[:n], y[:n]), reps)
        gp = GaussianProcess(seed=0).fit(X[:n], y[:n])
        state: dict[str, GaussianProcess] = {}

        def fresh(state: dict[str, GaussianProcess] = state, X: np.ndarray = X, y: np.ndarray = y, n: int = n,
                  gp: GaussianProcess = gp) -> None:
            state["gp"] = GaussianProcess(seed=0).fit(X[:n], y[:n], hyperparameters=gp.hyperparameters_)

        add = timed(lambda state=state, X=X, y=y, n=n: state["gp"].add(X[n], y[n]), reps, fresh)
        refit = timed(lambda state=state: state["gp"].refit(warm_start=True), reps,
                      lambda fresh=fresh, state=state, X=X, y=y, n=n: (fresh(), state["gp"].add(X[n], y[n])))
        print(f"{n:>5}  {fmt(fit)}  {fmt(add)}  {fmt(refit)}")
    X, y = problem(200, d, 0)
    gp = GaussianProcess(seed=0).fit(X, y)
    Z = np.random.default_rng(1).uniform(size=(10_000, d))
    gp.predict(Z[:10])  # caches L^-1
    print(f"predict 10,000 points (n = 200): {fmt(timed(lambda: gp.predict(Z), reps))}")
    slice_fit = timed(lambda: GaussianProcess(optimizer="slice", seed=0).fit(X[:50], y[:50]), max(1, reps // 2))
    print(f"slice sampling fit (n = 50, 10 samples, 20 burn-in sweeps): {fmt(slice_fit)}")


def bench_conditional(n: int, d: int, reps: int) -> None:
    print(f"\nConditional kernel, n = {n} in total, {d}-d, equal branches: block-wise vs dense")
    print(f"{'branches':>8}  {'mll+grad block':>26}  {'mll+grad dense':>26}  {'fit block':>26}  {'fit dense':>26}")
    X, y = problem(n, d, 7)
    for b in (1, 2, 3, 4, 8):
        groups = np.arange(n) % b
        yb = y + groups  # branches differ in level
        Xd = np.c_[X, groups]
        block = ConditionalGP(seed=0).fit(X, yb, groups)
        dense = GaussianProcess(DenseConditional(Matern52()), seed=0).fit(Xd, yb, hyperparameters=_with_dummy(block))
        theta = block.theta_
        theta_d = np.r_[theta[:d], 0.0, theta[d:]]
        assert np.isclose(block.log_marginal_likelihood(theta), dense.log_marginal_likelihood(theta_d), rtol=1e-8)
        e_block = timed(lambda block=block, theta=theta: block.log_marginal_likelihood(theta, grad=True), reps * 4)
        e_dense = timed(lambda dense=dense, theta_d=theta_d: dense.log_marginal_likelihood(theta_d, grad=True),
                        reps * 4)
        f_block = timed(lambda yb=yb, groups=groups: ConditionalGP(seed=0).fit(X, yb, groups), reps)
        f_dense = timed(lambda Xd=Xd, yb=yb: GaussianProcess(DenseConditional(Matern52()), seed=0).fit(Xd, yb), reps)
        print(f"{b:>8}  {fmt(e_block)}  {fmt(e_dense)}  {fmt(f_block)}  {fmt(f_dense)}")


def _with_dummy(gp: GaussianProcess):  # the branch column's (unused) lengthscale
    h = gp.hyperparameters_
    return type(h)(np.r_[h.lengthscales, 1.0], h.amplitude, h.noise, h.mean)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--n-cond", type=int, default=240)
    parser.add_argument("--dim", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus; medians of {args.reps} runs\n")
    bench_dense(args.dim, args.reps)
    bench_conditional(args.n_cond, args.dim, args.reps)


if __name__ == "__main__":
    main()
