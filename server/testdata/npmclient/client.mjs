// Drives a qsf server with the official openai npm package and prints one
// JSON object of what it got. Run by server/openai_client_test.go with
// QSF_BASE_URL (a loopback address), QSF_API_KEY and QSF_MODEL set.
import OpenAI from "openai";

const baseURL = process.env.QSF_BASE_URL;
const apiKey = process.env.QSF_API_KEY;
const model = process.env.QSF_MODEL;
if (!/^http:\/\/127\.0\.0\.1:\d+\/v1$/.test(baseURL ?? "")) {
  throw new Error(`QSF_BASE_URL ${baseURL} is not a loopback /v1 address`);
}
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const messages = [{ role: "user", content: "Hello from node" }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
out.chat = { content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason, usage: chat.usage };

const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let text = "";
let chunks = 0;
let usage = null;
let finish = null;
for await (const chunk of stream) {
  chunks++;
  const choice = chunk.choices[0];
  if (choice?.delta?.content) text += choice.delta.content;
  if (choice?.finish_reason) finish = choice.finish_reason;
  if (chunk.usage) usage = chunk.usage;
}
out.stream = { content: text, chunks, finish, usage };

const completion = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 10, temperature: 0 });
out.completion = { text: completion.choices[0].text, finish: completion.choices[0].finish_reason };

const emb = await client.embeddings.create({ model, input: ["first text", "second text"] });
out.embeddings = emb.data.map((d) => d.embedding.length);
out.embeddingNorm = Math.hypot(...emb.data[0].embedding);

try {
  await new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 }).models.list();
  out.badKey = "accepted";
} catch (e) {
  out.badKey = e.status;
}
try {
  await client.chat.completions.create({ model: "no-such-model", messages });
  out.badModel = "accepted";
} catch (e) {
  out.badModel = e.status;
}
console.log(JSON.stringify(out));
