// The defaults every command shares, written once: a server started with
// `agentperf sim serve` is where `profile`, `replay`, `run --url` and
// `eval` look first, and a workload, endpoint or model left unsaid is the
// same one in `profile`, `run` and `sim predict`.
#pragma once

namespace agentperf::defaults {

// vLLM's and AIPerf's default port (SGLang's own is 30000: pass --port
// 30000 / --url http://127.0.0.1:30000 for an SGLang server left at its
// default).
inline constexpr int kServerPort = 8000;
inline constexpr const char* kServerUrl = "http://127.0.0.1:8000";

// The endpoint: chat, AIPerf's default (`--endpoint-type chat`). The
// commands whose prompts are token ids (replay, calibrate engine and sim
// predict's virtual client) default to completions, the only OpenAI endpoint
// that takes a list of token ids, so their input lengths are exact by
// construction; each takes `--endpoint-type chat` (replay with a
// `--tokenizer` for exact-length text).
inline constexpr const char* kEndpoint = "chat";
inline constexpr const char* kTokenIdEndpoint = "completions";

// Synthetic requests: AIPerf's default input length (550 tokens), and 150
// output tokens.
inline constexpr int kInputTokens = 550;
inline constexpr int kOutputTokens = 150;

// The simulated model and GPU when none is named.
inline constexpr const char* kModelSpec = "qwen3-8b";
inline constexpr const char* kHardware = "h200";

}  // namespace agentperf::defaults
