// The first agent.  It can compute, and it can ask the parent for effects
// (logging, memory, templates...); it can reach nothing else.
async function main(input, ctx) {
  const name = (input && input.name) || "world";
  console.log(`hello from inside the box (run ${ctx.runId})`);
  const greeting = await chidori.template("Hello, {{name}}!", { name });
  return { greeting };
}
