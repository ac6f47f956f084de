// GSM8K-style accuracy check: few-shot prompts, answer extraction and exact
// match like lm-evaluation-harness's gsm8k task:
//  - prompt: "Question: {q}\nAnswer: {a}\n\n" per shot, then "Question: {q}\nAnswer:"
//    (chat: the shots as user/assistant turns, the question as the last user turn);
//  - stop sequences "Question:", "</s>", "<|im_end|>"; temperature 0;
//  - strict-match: the number after "#### "; flexible-extract: the last
//    number in the answer; both normalized as lm-eval does (commas, "$" and
//    a trailing "." removed, nothing else) and compared with the reference
//    after its "####".
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace agentperf::eval {

struct Gsm8kItem {
  std::string question;
  std::string answer;  // full reference solution, ending "#### N"
  std::string target;  // N, normalized
};

// One JSON object per line with "question" and "answer" (the GSM8K test
// split format). Throws UserError naming the file, line and field.
std::vector<Gsm8kItem> load_gsm8k(const std::string& path);

std::string normalize_number(std::string s);
std::optional<std::string> extract_strict(const std::string& response);
std::optional<std::string> extract_flexible(const std::string& response);

std::string completion_prompt(const std::vector<Gsm8kItem>& shots, const Gsm8kItem& item);
// [{role, content}] for chat endpoints.
std::vector<std::pair<std::string, std::string>> chat_messages(const std::vector<Gsm8kItem>& shots,
                                                               const Gsm8kItem& item);

struct Score {
  bool strict = false, flexible = false;
  std::optional<std::string> strict_answer, flexible_answer;
};
Score score(const Gsm8kItem& item, const std::string& response);

}  // namespace agentperf::eval
