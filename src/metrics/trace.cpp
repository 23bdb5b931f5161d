#include "metrics/trace.h"

namespace dyno::metrics {

const char* to_string(TokenCountSource source) {
  switch (source) {
    case TokenCountSource::kNone:
      return "none";
    case TokenCountSource::kUsage:
      return "usage";
    case TokenCountSource::kTokenizer:
      return "tokenizer";
    case TokenCountSource::kChunks:
      return "chunks";
  }
  return "none";
}

const char* to_string(RequestStatus status) {
  switch (status) {
    case RequestStatus::kOk:
      return "ok";
    case RequestStatus::kError:
      return "error";
    case RequestStatus::kCancelled:
      return "cancelled";
  }
  return "error";
}

const char* to_string(CachedSource source) {
  switch (source) {
    case CachedSource::kNone:
      return "none";
    case CachedSource::kUsage:
      return "usage";
    case CachedSource::kTimings:
      return "timings";
    case CachedSource::kTimingsPromptN:
      return "timings_prompt_n";
  }
  return "none";
}

}  // namespace dyno::metrics
