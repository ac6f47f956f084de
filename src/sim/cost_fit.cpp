#include "sim/cost_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "common/error.h"

namespace agentperf::sim {
namespace {

// Where a fit starts an additive coefficient that is 0 (log space cannot
// hold 0): a magnitude typical of real engines, so the simplex's first
// moves are of the right size. Scales start at their current value.
double typical_start(const std::string& name) {
  static const std::map<std::string, double> t = {
      {"front_end_s", 1e-3},     {"step_s", 1e-4},                {"request_s", 1e-5},
      {"attention_request_s", 1e-7},
      {"prefill_token_s", 1e-6}, {"moe_half_tokens_per_expert", 4}, {"moe_layer_step_s", 1e-5}, {"moe_prefill_layer_s", 1e-4},
      {"linear_prefill_layer_s", 1e-4}, {"front_end_token_s", 1e-6},
      {"linear_decode_s", 1e-6},
      {"linear_prefill_token_s", 1e-8}, {"allreduce_half_bytes", 1e5}};
  auto it = t.find(name);
  return it == t.end() ? 1.0 : it->second;
}

// The fit's unknowns in log space: the free cost coefficients, then the extras.
struct Problem {
  const std::vector<FitTarget>& targets;
  EngineCosts base;
  const CostFitOptions& opts;
  int evaluations = 0;
  // Per target: which extras it reads, and its last predictions with the
  // log-space values each was made at (two: a Jacobian alternates between
  // the centre and one moved column, and the centre must survive that).
  std::vector<std::vector<std::size_t>> reads;
  struct Cached {
    std::vector<double> at;
    double prediction = 0;
  };
  std::vector<std::array<Cached, 2>> cache;
  std::vector<int> older;  // the slot to overwrite next

  void index_reads() {
    reads.assign(targets.size(), {});
    cache.assign(targets.size(), {});
    older.assign(targets.size(), 0);
    for (std::size_t t = 0; t < targets.size(); ++t)
      for (std::size_t k = 0; k < opts.extras.size(); ++k)
        if (!targets[t].reads_extra || targets[t].reads_extra(opts.extras[k].name)) reads[t].push_back(k);
  }
  double predict_cached(std::size_t t, const std::vector<double>& x, const EngineCosts& c, const FitExtras& e) {
    std::vector<double> at(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(opts.free.size()));
    for (std::size_t k : reads[t]) at.push_back(x[opts.free.size() + k]);
    for (int s = 0; s < 2; ++s)
      if (!cache[t][s].at.empty() && cache[t][s].at == at) {
        older[t] = 1 - s;
        return cache[t][s].prediction;
      }
    Cached& slot = cache[t][older[t]];
    older[t] = 1 - older[t];
    slot.prediction = predict(targets[t], c, e);
    slot.at = std::move(at);
    return slot.prediction;
  }

  std::size_t size() const { return opts.free.size() + opts.extras.size(); }
  std::pair<double, double> bounds(std::size_t i) const {
    if (i < opts.free.size()) return EngineCosts::range(opts.free[i]);
    const auto& e = opts.extras[i - opts.free.size()];
    return {e.lo, e.hi};
  }
  double value(const std::vector<double>& x, std::size_t i) const {
    const auto [lo, hi] = bounds(i);
    return std::clamp(std::exp(x[i]), lo, hi);
  }
  EngineCosts costs_at(const std::vector<double>& x) const {
    EngineCosts c = base;
    for (std::size_t i = 0; i < opts.free.size(); ++i) c.at(opts.free[i]) = value(x, i);
    return c;
  }
  FitExtras extras_at(const std::vector<double>& x) const {
    FitExtras e;
    for (std::size_t i = 0; i < opts.extras.size(); ++i) e[opts.extras[i].name] = value(x, opts.free.size() + i);
    return e;
  }
  static double predict(const FitTarget& t, const EngineCosts& c, const FitExtras& e) {
    return t.predict_with_extras ? t.predict_with_extras(c, e) : t.predict(c);
  }
  // Each target's soft-L1 term as a least-squares residual (its signed
  // square root), so the objective is their sum of squares.
  double residuals(const std::vector<double>& x, std::vector<double>& out) {
    const EngineCosts c = costs_at(x);
    const FitExtras e = extras_at(x);
    out.resize(targets.size());
    double sum = 0;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const double p = predict_cached(i, x, c, e);
      const double r = p > 0 && std::isfinite(p) ? std::log(p / targets[i].measured) : 50.0;
      constexpr double d2 = 0.2 * 0.2;
      const double loss = 2 * d2 * (std::sqrt(1 + r * r / d2) - 1);
      out[i] = std::copysign(std::sqrt(loss), r);
      sum += loss;
    }
    for (std::size_t i = 0; i < opts.extras.size(); ++i) {
      const FitExtra& ex = opts.extras[i];
      if (ex.prior_log_sigma <= 0) continue;
      const double centre = ex.prior_centre > 0 ? ex.prior_centre : ex.start;
      const double z = (std::log(value(x, opts.free.size() + i)) - std::log(centre)) / ex.prior_log_sigma;
      out.push_back(z);
      sum += z * z;
    }
    ++evaluations;
    if (opts.progress) opts.progress(evaluations, sum);
    return sum;
  }
  double objective(const std::vector<double>& x) {
    std::vector<double> r;
    return residuals(x, r);
  }
};

// Nelder-Mead (standard coefficients: reflect 1, expand 2, contract 0.5,
// shrink 0.5) from x0 with initial steps `step` in each coordinate.
std::vector<double> nelder_mead(Problem& p, std::vector<double> x0, double step, int budget, double& best) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> s(n + 1, x0);
  std::vector<double> f(n + 1);
  for (std::size_t i = 0; i < n; ++i) s[i + 1][i] += step;
  for (std::size_t i = 0; i <= n; ++i) f[i] = p.objective(s[i]);
  const int stop_at = p.evaluations + budget;
  while (p.evaluations < stop_at) {
    std::vector<std::size_t> order(n + 1);
    for (std::size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return f[a] < f[b]; });
    const std::size_t lo = order.front(), hi = order.back(), second = order[n - 1];
    if (std::abs(f[hi] - f[lo]) <= 1e-10 * (1 + std::abs(f[lo]))) break;
    std::vector<double> c(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != hi)
        for (std::size_t k = 0; k < n; ++k) c[k] += s[i][k] / static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (std::size_t k = 0; k < n; ++k) x[k] = c[k] + t * (s[hi][k] - c[k]);
      return x;
    };
    auto xr = along(-1.0);
    const double fr = p.objective(xr);
    if (fr < f[lo]) {
      auto xe = along(-2.0);
      const double fe = p.objective(xe);
      if (fe < fr) s[hi] = xe, f[hi] = fe;
      else s[hi] = xr, f[hi] = fr;
    } else if (fr < f[second]) {
      s[hi] = xr, f[hi] = fr;
    } else {
      auto xc = fr < f[hi] ? along(-0.5) : along(0.5);
      const double fc = p.objective(xc);
      if (fc < std::min(fr, f[hi])) {
        s[hi] = xc, f[hi] = fc;
      } else {
        for (std::size_t i = 0; i <= n; ++i) {
          if (i == lo) continue;
          for (std::size_t k = 0; k < n; ++k) s[i][k] = s[lo][k] + 0.5 * (s[i][k] - s[lo][k]);
          f[i] = p.objective(s[i]);
        }
      }
    }
  }
  const auto best_i = static_cast<std::size_t>(std::min_element(f.begin(), f.end()) - f.begin());
  best = f[best_i];
  return s[best_i];
}


// Levenberg-Marquardt from x (log space), on Problem's residuals; returns
// the objective at the improved x.
double levenberg_marquardt(Problem& p, std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<double> r, rt;
  double f = p.residuals(x, r);
  const std::size_t m = r.size();  // targets, then priors
  double lambda = 1e-3;
  for (int iter = 0; iter < 60 && f > 1e-14; ++iter) {
    std::vector<std::vector<double>> jac(m, std::vector<double>(n));
    for (std::size_t j = 0; j < n; ++j) {
      // Log-space step of the finite differences.
      const double h = j < p.opts.free.size() ? 1e-4 : p.opts.extras[j - p.opts.free.size()].difference_step;
      auto xh = x;
      xh[j] += h;
      p.residuals(xh, rt);
      for (std::size_t i = 0; i < m; ++i) jac[i][j] = (rt[i] - r[i]) / h;
    }
    std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0));
    std::vector<double> jtr(n, 0);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t a = 0; a < n; ++a) {
        jtr[a] += jac[i][a] * r[i];
        for (std::size_t b = 0; b < n; ++b) jtj[a][b] += jac[i][a] * jac[i][b];
      }
    bool improved = false, converged = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      // (JtJ + lambda diag(JtJ)) d = -Jt r, by Gaussian elimination with pivoting.
      std::vector<std::vector<double>> A = jtj;
      std::vector<double> b(n);
      for (std::size_t a = 0; a < n; ++a) {
        A[a][a] += lambda * std::max(jtj[a][a], 1e-12) + 1e-15;
        b[a] = -jtr[a];
      }
      bool singular = false;
      for (std::size_t c = 0; c < n && !singular; ++c) {
        std::size_t piv = c;
        for (std::size_t k = c + 1; k < n; ++k)
          if (std::abs(A[k][c]) > std::abs(A[piv][c])) piv = k;
        if (std::abs(A[piv][c]) < 1e-300) {
          singular = true;
          break;
        }
        std::swap(A[c], A[piv]);
        std::swap(b[c], b[piv]);
        for (std::size_t k = c + 1; k < n; ++k) {
          const double q = A[k][c] / A[c][c];
          for (std::size_t l = c; l < n; ++l) A[k][l] -= q * A[c][l];
          b[k] -= q * b[c];
        }
      }
      if (singular) {
        lambda *= 10;
        continue;
      }
      std::vector<double> d(n);
      for (std::size_t c = n; c-- > 0;) {
        double v = b[c];
        for (std::size_t l = c + 1; l < n; ++l) v -= A[c][l] * d[l];
        d[c] = v / A[c][c];
      }
      auto xn = x;
      for (std::size_t j = 0; j < n; ++j) xn[j] += std::clamp(d[j], -3.0, 3.0);
      std::vector<double> rn;
      const double fn = p.residuals(xn, rn);
      if (fn < f) {
        converged = f - fn < 1e-12 * f;
        x = xn, r = rn, f = fn;
        lambda = std::max(lambda / 4, 1e-9);
        improved = true;
      } else {
        lambda *= 4;
      }
    }
    if (!improved || converged) break;
  }
  return f;
}

}  // namespace

double mape_percent(const std::vector<double>& relative_errors) {
  if (relative_errors.empty()) return 0;
  double s = 0;
  for (double e : relative_errors) s += std::abs(e);
  return 100.0 * s / static_cast<double>(relative_errors.size());
}

CostFitResult fit_engine_costs(const std::vector<FitTarget>& targets, const EngineCosts& start,
                               const CostFitOptions& opts) {
  for (const auto& name : opts.free) {
    try {
      (void)start.at(name);
    } catch (const std::out_of_range&) {
      throw UserError("cannot fit '" + name + "': not an engine cost coefficient");
    }
  }
  for (const auto& t : targets)
    if (!(t.measured > 0) || !std::isfinite(t.measured))
      throw UserError("cannot fit to '" + t.label + "': its measured value must be > 0");
  for (const auto& t : targets)
    if (!t.predict && !t.predict_with_extras) throw std::invalid_argument("fit target '" + t.label + "' predicts nothing");
  if (!opts.extras.empty())
    for (const auto& t : targets)
      if (!t.predict_with_extras) throw std::invalid_argument("fit with extras: '" + t.label + "' cannot take them");
  Problem p{targets, start, opts, 0, {}, {}, {}};
  p.index_reads();
  std::vector<double> x(p.size());
  for (std::size_t i = 0; i < opts.free.size(); ++i) {
    const double v = start.at(opts.free[i]);
    x[i] = std::log(v > 0 ? v : typical_start(opts.free[i]));
  }
  for (std::size_t i = 0; i < opts.extras.size(); ++i) x[opts.free.size() + i] = std::log(opts.extras[i].start);
  double best = p.objective(x);
  const auto x0 = x;
  if (!x.empty()) {
    const int rounds = 1 + std::max(0, opts.restarts);
    const int per_round = std::max(10, opts.max_evaluations / rounds);
    double step = 0.7;  // a factor of 2 in each coefficient at first
    for (int r = 0; r < rounds; ++r) {
      double f = 0;
      auto xr = nelder_mead(p, x, step, per_round, f);
      if (f <= best) best = f, x = xr;
      step *= 0.5;
    }
    if (opts.polish) {
      auto xp = x;
      double f = levenberg_marquardt(p, xp);
      if (f < best) best = f, x = xp;
      const auto centre = x;
      const std::size_t restart_dims = opts.polish_restarts ? x.size() : 0;
      // Restarts move the shared coefficients; an extra held by a prior
      // (one setup's own cost) has its targets and its prior to place it.
      for (std::size_t j = 0; j < restart_dims; ++j) {
        if (j >= opts.free.size() && opts.extras[j - opts.free.size()].prior_log_sigma > 0) continue;
        std::vector<double> starts = {centre[j] + std::log(0.25), centre[j] + std::log(4.0)};
        for (const double start_j : starts) {
          auto xs = centre;
          xs[j] = start_j;
          f = levenberg_marquardt(p, xs);
          if (f < best) best = f, x = xs;
        }
        // An additive cost that the simplex drove towards 0 leaves the loss
        // flat in its direction (its share of every prediction is nil; 4x
        // of nothing is nothing), and the other unknowns settle around
        // that: with 1 % noise on Qwen3-32B's decode and prefill probes, 6
        // fits of 8 ended with step_s near 0 and the weight read and
        // request_s 20-36 % high, at 4-30 times the loss of the truth. So
        // each additive cost also restarts from the fit's start at every
        // decade of its range, the other unknowns with it.
        if (p.bounds(j).first == 0)
          for (const double share : {1e-1, 1e-2, 1e-3, 1e-4}) {
            auto xs = x0;
            xs[j] = std::log(p.bounds(j).second * share);
            f = levenberg_marquardt(p, xs);
            if (f < best) best = f, x = xs;
          }
      }
    }
  }
  CostFitResult out;
  out.costs = p.costs_at(x);
  out.extras = p.extras_at(x);
  out.objective = best;
  for (const auto& t : targets) {
    const double pred = Problem::predict(t, out.costs, out.extras);
    out.predicted.push_back(pred);
    out.relative_error.push_back((pred - t.measured) / t.measured);
  }
  out.evaluations = p.evaluations;
  return out;
}

}  // namespace agentperf::sim
