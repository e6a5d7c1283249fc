// Drives a damascus server with the official OpenAI client library for
// JavaScript (model/serve's TestOpenAIClient runs it). The server's URL is
// $DAMASCUS_URL, on 127.0.0.1 only. Prints one line per check; exits 1 on
// the first failure, naming it.
import OpenAI from 'openai';

const url = process.env.DAMASCUS_URL ?? '';
if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) {
  console.error(`DAMASCUS_URL ${JSON.stringify(url)} is not http://127.0.0.1:PORT`);
  process.exit(2);
}
const model = process.env.DAMASCUS_MODEL ?? 'tiny';
const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0, timeout: 120_000 });

function check(ok, what) {
  if (!ok) {
    console.error(`FAIL: ${what}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

const prompts = ['Hello there', 'Once upon a time', 'Why is the sky blue?', 'Count: 1 2 3 4 5 6 7 8 9 10'];
const chatArgs = (p) => ({ model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: p }], temperature: 0, max_tokens: 10 });

async function chatText(p) {
  const r = await client.chat.completions.create(chatArgs(p));
  return r.choices[0].message.content;
}

async function chatStreamText(p, onChunk, extra = {}) {
  const stream = await client.chat.completions.create({ ...chatArgs(p), stream: true, ...extra });
  let text = '', finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    text += c?.delta?.content ?? '';
    finish = c?.finish_reason ?? finish;
    if (onChunk && onChunk(stream)) break;
  }
  return { text, finish };
}

async function expectStatus(promise, status, want, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === status && String(e.message).includes(want),
      `${what}: ${e.status} ${e.message}`);
    return;
  }
  check(false, `${what}: accepted`);
}

// The model list names the served model.
const models = await client.models.list();
check(models.data.some((m) => m.id === model), `models.list has ${model}`);

// Non-streaming and streaming chat and completions, each answered alone.
const solo = [];
for (const p of prompts) {
  const r = await client.chat.completions.create(chatArgs(p));
  const c = r.choices[0];
  check(r.object === 'chat.completion' && typeof c.message.content === 'string' && r.usage.completion_tokens >= 1 &&
    r.usage.completion_tokens <= 10 && ['stop', 'length'].includes(c.finish_reason), `chat ${JSON.stringify(p)}: ${r.usage.completion_tokens} tokens, ${c.finish_reason}`);
  solo.push(c.message.content);
  const s = await chatStreamText(p);
  check(s.text === c.message.content && s.finish === c.finish_reason, `streamed chat ${JSON.stringify(p)} equals the non-streamed answer`);
}
const comp = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
check(comp.object === 'text_completion' && typeof comp.choices[0].text === 'string' && comp.usage.prompt_tokens > 0, 'completions.create');
let streamed = '';
for await (const chunk of await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, stream: true })) {
  streamed += chunk.choices[0]?.text ?? '';
}
check(streamed === comp.choices[0].text, 'streamed completion equals the non-streamed one');

// 16 concurrent requests, half streamed, one cancelled mid-stream: each of
// the others answers at temperature 0 what it answered alone.
let cancelled = false;
const jobs = [];
for (let i = 0; i < 16; i++) {
  const p = prompts[i % prompts.length];
  if (i === 5) {
    jobs.push((async () => {
      try {
        // 200 tokens asked for: the server stops at the disconnect, not the end.
        await chatStreamText(p, (stream) => { stream.controller.abort(); cancelled = true; return true; }, { max_tokens: 200 });
      } catch (e) {
        if (!(e instanceof OpenAI.APIUserAbortError)) throw e;
        cancelled = true;
      }
      return null;
    })());
    continue;
  }
  jobs.push(i % 2 ? chatStreamText(p).then((s) => s.text) : chatText(p));
}
const answers = await Promise.all(jobs);
check(cancelled, 'one of 16 concurrent streams cancelled after its first chunk');
answers.forEach((a, i) => {
  if (a !== null) check(a === solo[i % prompts.length], `concurrent request ${i} answers what it did alone`);
});

// Bad input: an over-long prompt and malformed bodies are 400s naming why.
await expectStatus(client.completions.create({ model, prompt: 'word '.repeat(2000), max_tokens: 4 }), 400, 'the context holds', 'over-long prompt');
await expectStatus(client.chat.completions.create({ ...chatArgs('hi'), max_tokens: 'many' }), 400, 'max_tokens', 'wrong-typed max_tokens');
const raw = await fetch(url + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"messages":[' });
const body = await raw.json();
check(raw.status === 400 && body.error && String(body.error.message).includes('malformed JSON'), `malformed JSON body: ${raw.status} ${body.error?.message}`);

// Log-probabilities and the usage chunk through the client's own types;
// a field this server does not provide (n > 1) is a 400 naming it.
const lp = await client.chat.completions.create({ ...chatArgs(prompts[1]), logprobs: true, top_logprobs: 2 });
const entries = lp.choices[0].logprobs?.content ?? [];
check(entries.length >= 1 && entries.every((e) => e.logprob <= 0 && e.top_logprobs.length === 2 && e.top_logprobs[0].token === e.token) &&
  entries.map((e) => Buffer.from(e.bytes).toString('latin1')).join('') === Buffer.from(lp.choices[0].message.content, 'utf8').toString('latin1'),
  `chat logprobs: ${entries.length} entries, greedy the top alternative, bytes spelling the content`);
let usageChunk = null;
for await (const chunk of await client.chat.completions.create({ ...chatArgs(prompts[1]), stream: true, stream_options: { include_usage: true } })) {
  if (chunk.choices.length === 0) usageChunk = chunk;
}
check(usageChunk?.usage?.completion_tokens >= 1, 'stream_options.include_usage: a last chunk with the usage and no choices');
await expectStatus(client.chat.completions.create({ ...chatArgs('hi'), n: 2 }), 400, 'one choice a request', 'n: 2');

// Structured output: a JSON schema of a boolean and an enum holds, key order
// included, even for a random model.
const schema = { type: 'object', properties: { ok: { type: 'boolean' }, pet: { enum: ['cat', 'dog'] } }, required: ['ok', 'pet'] };
const so = await client.chat.completions.create({ ...chatArgs(prompts[2]), max_tokens: 80, response_format: { type: 'json_schema', json_schema: { name: 'pet', schema, strict: true } } });
let parsed = null;
try { parsed = JSON.parse(so.choices[0].message.content); } catch { parsed = null; }
check(parsed !== null && typeof parsed.ok === 'boolean' && ['cat', 'dog'].includes(parsed.pet) && Object.keys(parsed).join() === 'ok,pet',
  `response_format json_schema: ${so.choices[0].message.content.replace(/\s+/g, ' ')}`);

// Tool calling: a named function's call (the answer constrained to it)
// comes back in tool_calls, streamed too; the call and its result then go
// back into the conversation.
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Oslo'] } }, required: ['city'] } } }];
const toolArgs = { model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, temperature: 0, max_tokens: 200,
  tool_choice: { type: 'function', function: { name: 'get_weather' } } };
const tc = await client.chat.completions.create(toolArgs);
const call = tc.choices[0].message.tool_calls?.[0];
check(tc.choices[0].finish_reason === 'tool_calls' && call?.function?.name === 'get_weather' && ['Paris', 'Oslo'].includes(JSON.parse(call.function.arguments).city),
  `tool_choice get_weather: ${call?.function?.arguments}`);
let streamedCall = null, toolFinish = null;
for await (const chunk of await client.chat.completions.create({ ...toolArgs, stream: true })) {
  streamedCall = chunk.choices[0]?.delta?.tool_calls?.[0] ?? streamedCall;
  toolFinish = chunk.choices[0]?.finish_reason ?? toolFinish;
}
check(toolFinish === 'tool_calls' && streamedCall?.function?.name === 'get_weather' && streamedCall.function.arguments === call.function.arguments,
  'the same call streamed');
const after = await client.chat.completions.create({ ...toolArgs, tool_choice: 'auto', max_tokens: 4,
  messages: [...toolArgs.messages, tc.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' }] });
check(after.usage.prompt_tokens > tc.usage.prompt_tokens, 'the call and its result in the conversation');

// Still serving after all that.
check((await chatText(prompts[0])) === solo[0], 'a request after the errors answers as before');
