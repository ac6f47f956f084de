#include "net/sse_parser.h"

namespace agentperf::net {

void SseParser::reset() {
  line_.clear();
  data_.clear();
  type_.clear();
  id_.clear();
  has_data_ = false;
  skip_lf_ = false;
  comments_ = 0;
}

}  // namespace agentperf::net
