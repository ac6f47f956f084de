// The HTML template and the chart library (uPlot), compiled in so a report
// is one self-contained file.
#pragma once

namespace agentperf::report {
const char* report_template();
const char* uplot_js();
const char* uplot_css();
}  // namespace agentperf::report
