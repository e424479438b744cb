// Recorded by chidori 0.1.0 before small bodies came with the fetch's head
// (tests/journals/fetch-streamed-0.1.0.jsonl): each fetch is an http call
// answered with "stream" and its body's http.read calls.
module.exports = async () => {
  const a = await (await fetch("http://127.0.0.1:45099/text?s=h%C3%A9llo")).text();
  const b = await (await fetch("http://127.0.0.1:45099/json")).json();
  const r = await fetch("http://127.0.0.1:45099/bytes?n=300");
  const u = new Uint8Array(await r.arrayBuffer());
  let sum = 0;
  for (const x of u) sum += x;
  return [a, b.name, r.status, u.length, sum];
};
