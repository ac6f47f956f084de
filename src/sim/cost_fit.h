// Fitting engine costs (sim/engine_costs.h) to measurements: one fitter for
// `sim validate --fit` (published points) and `calibrate engine` (probes of
// a live endpoint).
//
// Each target is a measured value and a function that predicts it from a
// set of costs (usually a whole virtual-time run of the simulator, so the
// prediction includes queueing and scheduling, not just one step). The fit
// minimises a robust least-squares loss of the log ratios r = ln(predicted /
// measured), plus the priors of any extras that have one (FitExtra):
// soft-L1, 2 d^2 (sqrt(1 + r^2 / d^2) - 1) with d = 0.2 (SciPy's
// least_squares loss='soft_l1'), which is r^2 for errors within ~20 % and
// grows only linearly beyond, so one point measured under other conditions
// (published sets mix setups) cannot drag every other point off. Log ratios
// make a 5 ms ITL and a 5 s TTFT weigh the same. The model is not linear in the costs (a step is max(memory,
// compute) plus the rest, and a run's metric is a schedule of steps), so the
// minimiser is Nelder-Mead over the free coefficients in log space: scales
// stay positive and additive costs non-negative, and a coefficient spanning
// decades moves by factors, not by steps. Restarts from the best point
// (with a fresh simplex) stop it from stalling on a flat face. Every value
// stays inside its coefficient's plausible range (EngineCosts::range).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/engine_costs.h"

namespace agentperf::sim {

// Extra named values a fit may vary beside the costs (e.g. a GPU's HBM
// efficiency in `sim validate --fit`), passed to each target's predict.
using FitExtras = std::map<std::string, double>;

struct FitTarget {
  std::string label;
  double measured = 0;
  std::function<double(const EngineCosts&)> predict;
  // Used instead of predict when the fit has extras.
  std::function<double(const EngineCosts&, const FitExtras&)> predict_with_extras;
  // Optional: whether the prediction reads this extra (one setup's unknowns
  // touch only that setup's targets). The fit then reuses a target's last
  // prediction while the values it reads are unchanged, so the Jacobian's
  // column for such an extra reruns only its few targets.
  std::function<bool(const std::string& extra)> reads_extra;
};

struct FitExtra {
  std::string name;
  double start = 1, lo = 0, hi = 1;
  // > 0: a prior belief that the value is near its centre (prior_centre,
  // or `start` when that is 0), within a factor of exp(prior_log_sigma) at
  // one standard deviation: the loss gains (ln(value / centre) /
  // prior_log_sigma)^2. It ties an unknown that few
  // targets see (one setup's own cost, fitted from its two or three points)
  // to where it starts, so it moves only as far as its targets insist.
  double prior_log_sigma = 0;
  double prior_centre = 0;  // where the prior is centred; 0: at start
  // The log-space step of the polish's finite differences: a value the
  // prediction reads in whole units (a token count) needs one that moves it
  // by more than a unit, or its gradient reads as nil.
  double difference_step = 1e-4;
};

struct CostFitOptions {
  std::vector<std::string> free;  // coefficients to fit; the rest stay as in `start`
  std::vector<FitExtra> extras;    // other values to fit (targets need predict_with_extras)
  int max_evaluations = 400;
  int restarts = 2;
  std::function<void(int evaluation, double objective)> progress;  // optional
  // After the simplex: Levenberg-Marquardt on the same loss (each target's
  // residual is the signed square root of its soft-L1 term), from the
  // simplex's answer, again from each unknown moved 4x either way, and from
  // the start with each additive cost at each decade of its range (one the
  // simplex drove to ~0 has a flat loss around it). Probes
  // of a live engine make narrow valleys (a memory-bound decode step fixes
  // step_s + the weight read to a fraction of a per cent; only compute-bound
  // probes say where along that line the truth lies): the simplex crawls
  // along them and stalls, a Gauss-Newton step follows them; and a local
  // method stops on a kink of max(memory, compute) that a start past it
  // gets round.
  bool polish = false;
  // With polish: also the restarts above (each a whole Levenberg-Marquardt
  // run; without them one run from the simplex's answer).
  bool polish_restarts = true;
};

struct CostFitResult {
  EngineCosts costs;
  FitExtras extras;
  double objective = 0;                // sum of the soft-L1 loss of the log ratios
  std::vector<double> predicted;       // per target, at the fitted costs
  std::vector<double> relative_error;  // (predicted - measured) / measured
  int evaluations = 0;
};

// Throws UserError when a free name is not a coefficient or a target's
// measured value is not positive.
CostFitResult fit_engine_costs(const std::vector<FitTarget>& targets, const EngineCosts& start,
                               const CostFitOptions& opts);

// Mean absolute percentage error of relative errors, in %.
double mape_percent(const std::vector<double>& relative_errors);

}  // namespace agentperf::sim
