// The agent both SDK suites serve (sdk/python/tests, sdk/typescript/test): each input field asks for one behaviour.
export default async (input) => {
  input = input || {};
  if (input.log) console.log(input.log);
  if (input.sleep) await new Promise((r) => setTimeout(r, input.sleep));
  if (input.fail) throw new Error(input.fail);
  const out = { echo: input };
  if (input.write) {
    try { await chidori.workspace.write("a.txt", "x"); out.wrote = "written"; } catch (e) { out.wrote = e.code; }
  }
  if (input.ask) out.answer = await chidori.input(input.ask);
  return out;
};
