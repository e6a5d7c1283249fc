// Chat-template oracle for Go tests: reads a JSON request on stdin,
//   {"bos_token": string, "eos_token": string,
//    "cases": [{"template": string, "messages": [...], "add_generation_prompt": bool,
//               "date_string": string (optional)}]}
// and writes [{"text": rendered} or {"error": message}, ...] on stdout,
// rendering with apply_chat_template of @lenml/tokenizers (transformers.js's
// Jinja). Rendering does not tokenize, so the tokenizer is an empty BPE model
// carrying only the config's special-token texts.
"use strict";
const fs = require("fs");
const { TokenizerLoader } = require("@lenml/tokenizers");

const req = JSON.parse(fs.readFileSync(0, "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: {
    model: { type: "BPE", vocab: {}, merges: [] },
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
  },
  tokenizerConfig: { bos_token: req.bos_token, eos_token: req.eos_token },
});
const out = req.cases.map((c) => {
  const kwargs = {
    chat_template: c.template,
    add_generation_prompt: !!c.add_generation_prompt,
    tokenize: false,
  };
  if (c.date_string !== undefined) kwargs.date_string = c.date_string;
  try {
    return { text: tokenizer.apply_chat_template(c.messages, kwargs) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(out));
